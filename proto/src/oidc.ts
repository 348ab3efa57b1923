// Entry point for OIDC tokens of the ci.agents.v1 protobuf package: messages and the OidcService descriptor.
export * from "./gen/ci/agents/v1/oidc_service_pb.js";
