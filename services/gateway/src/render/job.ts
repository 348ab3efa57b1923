// Moved to packages/rest-render, shared with the notifications service (docs/notifications.md).
export * from "@conveyor/rest-render";
