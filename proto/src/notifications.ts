// Entry point for the ci.notifications.v1 protobuf package: messages and the service descriptor.
export * from "./gen/ci/notifications/v1/notifications_service_pb.js";
