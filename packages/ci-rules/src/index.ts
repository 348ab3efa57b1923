export * from "./branch-filter.js";
export * from "./conditionals/build-context.js";
export * from "./conditionals/conditionals.js";
export * from "./render-steps.js";
export * from "./steps/parse-yaml.js";
export * from "./steps/step.js";
export * from "./steps/to-yaml.js";
export * from "./steps/visual-steps.js";
