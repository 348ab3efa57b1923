// Entry point for the ci.agents.v1 protobuf package: messages, enums, the service descriptor and event payloads.
export * from "./gen/ci/agents/v1/agents_pb.js";
export * from "./gen/ci/agents/v1/agents_service_pb.js";
export * from "./gen/ci/agents/v1/events_pb.js";
export * from "./gen/ci/agents/v1/queues_pb.js";
