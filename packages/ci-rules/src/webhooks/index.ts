export * from "./build-rules.js";
export * from "./forge-headers.js";
export * from "./open-pull-requests.js";
export * from "./parse-delivery.js";
export * from "./provider-settings.js";
export * from "./skip-markers.js";
export * from "./webhook-event.js";
