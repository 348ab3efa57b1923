// Entry point for the ci.common.v1 protobuf package: error details shared by every service.
export * from "./gen/ci/common/v1/errors_pb.js";
