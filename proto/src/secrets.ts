// Entry point for the cluster secrets of the ci.agents.v1 protobuf package: messages and the SecretsService descriptor.
export * from "./gen/ci/agents/v1/secrets_pb.js";
export * from "./gen/ci/agents/v1/secrets_service_pb.js";
