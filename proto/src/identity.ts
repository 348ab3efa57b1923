// Entry point for the ci.identity.v1 protobuf package: messages, enums, the service descriptors and event payloads.

export * from "./gen/ci/identity/v1/access_pb.js";
export * from "./gen/ci/identity/v1/events_pb.js";
export * from "./gen/ci/identity/v1/identity_pb.js";
export * from "./gen/ci/identity/v1/identity_service_pb.js";
export * from "./gen/ci/identity/v1/registries_pb.js";
export * from "./gen/ci/identity/v1/registries_service_pb.js";
export * from "./gen/ci/identity/v1/rules_pb.js";
export * from "./gen/ci/identity/v1/rules_service_pb.js";
export * from "./gen/ci/identity/v1/teams_pb.js";
export * from "./gen/ci/identity/v1/teams_service_pb.js";
