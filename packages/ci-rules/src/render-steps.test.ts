import fjs from "fast-json-stringify";
import { type RenderableStep, renderRestStep, restStepSchema } from "./render-steps.js";

const serialize = fjs(restStepSchema as unknown as Parameters<typeof fjs>[0]);

describe("renderRestStep (ci-rules)", () => {
  it("tolerates stored steps that lack optional collections", () => {
    const stored = { type: "script", name: "n", command: "c" } as unknown as RenderableStep;
    expect(renderRestStep(stored)).toMatchObject({ env: {}, agent_query_rules: [], timeout_in_minutes: null });
  });

  it("keeps the type of a step it does not know", () => {
    expect(renderRestStep({ type: "matrix" } as unknown as RenderableStep)).toEqual({ type: "matrix" });
    expect(renderRestStep({} as unknown as RenderableStep)).toEqual({ type: "unknown" });
  });

  it("normalizes allow_failure to a boolean", () => {
    const step = { type: "waiter", depends_on: [{ step: "a" }] } as unknown as RenderableStep;
    expect(renderRestStep(step)).toEqual({ type: "waiter", depends_on: [{ step: "a", allow_failure: false }] });
  });

  it("has a schema fast-json-stringify compiles, keeping unknown properties", () => {
    const out = renderRestStep({
      type: "script",
      name: "n",
      command: "c",
      agent_query_rules: [],
      retry: { automatic: [{ exit_status: [1, 2], limit: 3 }] },
    });
    expect(JSON.parse(serialize(out))).toEqual(out);
  });

  it("lists the spec's fields in the schema", () => {
    const names = Object.keys(restStepSchema.properties);
    for (const field of [
      "type",
      "name",
      "label",
      "command",
      "artifact_paths",
      "branch_configuration",
      "env",
      "timeout_in_minutes",
      "agent_query_rules",
      "concurrency",
      "parallelism",
      "pipeline",
      "build",
      "async",
      "key",
      "depends_on",
      "if",
    ]) {
      expect(names).toContain(field);
    }
    expect(restStepSchema.additionalProperties).toBe(true);
  });
});
