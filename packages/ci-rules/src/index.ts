export * from "./branch-filter.js";
export * from "./render-steps.js";
