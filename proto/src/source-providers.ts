// Entry point for the source-provider connections of ci.notifications.v1 (docs/statuses.md): messages and the service descriptor.
export * from "./gen/ci/notifications/v1/source_providers_pb.js";
