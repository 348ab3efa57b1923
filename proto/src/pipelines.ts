// Entry point for the ci.pipelines.v1 protobuf package: messages, enums, the service descriptor and event payloads.

export * from "./gen/ci/pipelines/v1/events_pb.js";
export * from "./gen/ci/pipelines/v1/pipelines_pb.js";
export * from "./gen/ci/pipelines/v1/pipelines_service_pb.js";
export * from "./gen/ci/pipelines/v1/schedules_pb.js";
export * from "./gen/ci/pipelines/v1/steps_pb.js";
