import type { PipelineStep } from "./step.js";
import { jobCount, STEP_LIMITS, stepCountProblems } from "./step-limits.js";

const script = (parallelism?: number): PipelineStep => ({
  type: "script",
  name: "",
  command: "x",
  agent_query_rules: [],
  ...(parallelism === undefined ? {} : { parallelism }),
});

describe("jobCount", () => {
  it("counts one job per step, parallelism jobs for a parallel step", () => {
    expect(
      jobCount([
        script(),
        { type: "waiter" },
        script(3),
        { type: "trigger", label: "", pipeline: "p", async: false, parallelism: 2 },
      ]),
    ).toBe(7);
  });
});

describe("stepCountProblems", () => {
  it("takes 500 steps and 4,000 jobs", () => {
    expect(
      stepCountProblems(
        Array.from({ length: 500 }, () => script()),
        "configuration",
      ),
    ).toEqual([]);
    expect(
      stepCountProblems(
        Array.from({ length: 8 }, () => script(500)),
        "configuration",
      ),
    ).toEqual([]);
  });

  it("refuses more steps than a pipeline may hold", () => {
    expect(
      stepCountProblems(
        Array.from({ length: 501 }, () => script()),
        "configuration",
      ),
    ).toEqual([{ field: "configuration", code: "has too many steps (maximum is 500, got 501)" }]);
  });

  it("refuses steps that make more jobs than a build may hold", () => {
    const steps = Array.from({ length: 9 }, () => script(STEP_LIMITS.maxParallelism));
    expect(stepCountProblems(steps, "steps")).toEqual([
      {
        field: "steps",
        code: "makes 4500 jobs per build, counting parallelism and matrices; a build may hold at most 4000",
      },
    ]);
  });
});
