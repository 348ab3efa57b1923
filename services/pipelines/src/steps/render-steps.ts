/**
 * The REST `steps` array element for a step. The rendering and its response schema live in `@conveyor/ci-rules`
 * (packages/ci-rules/src/render-steps.ts) so that the gateway, which serializes pipelines, can use them without
 * depending on this service; this module gives them the pipelines model's types.
 */
import { type RestStep, renderRestStep as render, restStepSchema } from "@conveyor/ci-rules";
import type { PipelineStep } from "./step.js";

export type { RestStep };
export { restStepSchema };

/** Renders one step as the REST API's `steps` array shows it (ci-rest-api.md "Step object types"). */
export function renderRestStep(step: PipelineStep): RestStep {
  return render(step);
}
