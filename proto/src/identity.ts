// Entry point for the ci.identity.v1 protobuf package: messages, enums, the service descriptor and event payloads.

export * from "./gen/ci/identity/v1/events_pb.js";
export * from "./gen/ci/identity/v1/identity_pb.js";
export * from "./gen/ci/identity/v1/identity_service_pb.js";
