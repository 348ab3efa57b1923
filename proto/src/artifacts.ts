// Entry point for the ci.artifacts.v1 protobuf package: messages, enums, the service descriptor and event payloads.
export * from "./gen/ci/artifacts/v1/artifacts_pb.js";
export * from "./gen/ci/artifacts/v1/artifacts_service_pb.js";
