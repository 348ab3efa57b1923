// Entry point for the ci.builds.v1 protobuf package: messages, enums, the service descriptor and event payloads.
export * from "./gen/ci/builds/v1/builds_pb.js";
export * from "./gen/ci/builds/v1/builds_service_pb.js";
export * from "./gen/ci/builds/v1/events_pb.js";
