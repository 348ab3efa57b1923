/**
 * The REST API's JSON shapes, rendered from the services' messages with their TypeBox schemas
 * (docs/compatibility.md#go-buildkite): the gateway answers them and the notifications service sends them in
 * webhooks' bodies (docs/notifications.md), so a build looks the same in both.
 */
export * from "./agent.js";
export * from "./build.js";
export * from "./job.js";
export * from "./pipeline.js";
export * from "./schemas.js";
export * from "./urls.js";
export * from "./user.js";
