export * from "./commit-statuses.js";
export * from "./forge-requests.js";
export * from "./notify-statuses.js";
export * from "./repository-url.js";
export * from "./status-text.js";
