import { expandMatrix, interpolateMatrix, MATRIX_LIMITS, matrixCombinations, matrixJobCount } from "./matrix.js";
import { parsePipelineYaml } from "./parse-yaml.js";
import type { ScriptStep, StepError } from "./step.js";
import { jobCount } from "./step-limits.js";

function script(yaml: string): ScriptStep {
  const result = parsePipelineYaml(yaml);
  if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.errors)}`);
  const step = result.steps[0];
  if (step?.type !== "script") throw new Error("expected a command step");
  return step;
}

function errors(yaml: string): StepError[] {
  const result = parsePipelineYaml(yaml);
  if (result.ok) throw new Error(`expected errors, got ${JSON.stringify(result.steps)}`);
  return result.errors;
}

// Buildkite's documentation examples ("Build matrix"), verbatim.
const SINGLE = `
steps:
  - label: "{{matrix}} build"
    command: "GOOS={{matrix}} go build"
    env:
      os: "{{matrix}}"
    matrix:
      - "darwin"
      - "Linux"
      - "Windows"
`;

const MULTI = `
steps:
- label: "💥 Matrix Build"
  command: "echo {{matrix.os}} {{matrix.arch}} {{matrix.test}}"
  agents:
    queue: "builder-{{matrix.arch}}"
  matrix:
    setup:
      arch:
        - "amd64"
        - "arm64"
      os:
        - "windows"
        - "linux"
      test:
        - "A"
        - "B"
`;

const ADJUSTED = `
steps:
- label: "💥 Matrix build with adjustments"
  command: "echo {{matrix.os}} {{matrix.arch}} {{matrix.test}}"
  matrix:
    setup:
      arch:
        - "amd64"
        - "arm64"
      os:
        - "windows"
        - "linux"
      test:
        - "A"
        - "B"
    adjustments:
      - with:
          os: "windows"
          arch: "arm64"
          test: "B"
        soft_fail: true
      - with:
          os: "linux"
          arch: "arm64"
          test: "B"
        skip: true
`;

const PLAN9 = `
steps:
- label: "💥 Matrix build with adjustments"
  command: "echo {{matrix.os}} {{matrix.arch}} {{matrix.test}}"
  matrix:
    setup:
      arch:
        - "amd64"
        - "arm64"
      os:
        - "windows"
        - "linux"
      test:
        - "A"
        - "B"
    adjustments:
      - with:
          os: "Plan 9"
          arch: "arm64"
          test: "B"
`;

const GROUPED = `
steps:
  - group: "📦 Build"
    steps:
      - label: "💥 Matrix build with adjustments"
        command: "echo {{matrix.os}} {{matrix.arch}} {{matrix.test}}"
        matrix:
          setup:
            arch:
              - "amd64"
              - "arm64"
            os:
              - "windows"
              - "linux"
            test:
              - "A"
              - "B"
`;

describe("the documentation's examples", () => {
  it("expands the single list form into three jobs, in label, command and env", () => {
    const jobs = expandMatrix(script(SINGLE)) ?? [];
    expect(jobs.map((j) => [j.permutation, j.step.name, j.step.command, j.step.env])).toEqual([
      [{ "": "darwin" }, "darwin build", "GOOS=darwin go build", { os: "darwin" }],
      [{ "": "Linux" }, "Linux build", "GOOS=Linux go build", { os: "Linux" }],
      [{ "": "Windows" }, "Windows build", "GOOS=Windows go build", { os: "Windows" }],
    ]);
    for (const job of jobs) expect(job.step.matrix).toBeUndefined();
  });

  it("multiplies the dimensions of setup: 2 × 2 × 2 = 8 jobs, agents interpolated", () => {
    const jobs = expandMatrix(script(MULTI)) ?? [];
    expect(jobs).toHaveLength(8);
    expect(jobs[0]?.permutation).toEqual({ arch: "amd64", os: "windows", test: "A" });
    expect(jobs[1]?.permutation).toEqual({ arch: "amd64", os: "windows", test: "B" });
    expect(jobs[7]?.permutation).toEqual({ arch: "arm64", os: "linux", test: "B" });
    expect(jobs[0]?.step.command).toBe("echo windows amd64 A");
    expect(jobs[7]?.step.agent_query_rules).toEqual(["queue=builder-arm64"]);
    expect(jobs[7]?.step.name).toBe("💥 Matrix Build");
  });

  it("adjustments: soft_fail on one combination, skip removes another", () => {
    const jobs = expandMatrix(script(ADJUSTED)) ?? [];
    expect(jobs).toHaveLength(7);
    const soft = jobs.find((j) => j.step.command === "echo windows arm64 B");
    expect(soft?.step.soft_fail).toBe(true);
    expect(jobs.filter((j) => j.step.soft_fail !== undefined)).toHaveLength(1);
    expect(jobs.some((j) => j.step.command === "echo linux arm64 B")).toBe(false);
  });

  it("an adjustment outside the setup adds a combination: 2 × 2 × 2 + 1 = 9", () => {
    const jobs = expandMatrix(script(PLAN9)) ?? [];
    expect(jobs).toHaveLength(9);
    expect(jobs[8]?.permutation).toEqual({ os: "Plan 9", arch: "arm64", test: "B" });
    expect(jobs[8]?.step.command).toBe("echo Plan 9 arm64 B");
  });

  it("a matrix inside a group keeps its group", () => {
    const jobs = expandMatrix(script(GROUPED)) ?? [];
    expect(jobs).toHaveLength(8);
    for (const job of jobs) expect(job.step.group).toEqual({ label: "📦 Build" });
  });

  it("refuses matrix values in concurrency_group, as the documentation says", () => {
    const found = errors(`
steps:
- label: "💥 Matrix Build"
  command: "echo {{matrix.os}} {{matrix.arch}} {{matrix.test}}"
  concurrency: 1
  concurrency_group: "jsdevtest-{{matrix.arch}}"
  matrix:
    setup:
      arch:
        - "amd64"
      os:
        - "windows"
      test:
        - "A"
`);
    expect(found).toEqual([
      { field: "configuration.steps[0].concurrency_group", code: expect.stringMatching(/cannot use matrix values/) },
    ]);
  });
});

describe("interpolateMatrix", () => {
  it("replaces tokens with spaces inside the braces, as go-pipeline does", () => {
    expect(interpolateMatrix("{{ matrix }}-{{matrix.os}}-{{  matrix.os  }}", { "": "a", os: "b" })).toBe("a-b-b");
  });
  it("leaves tokens naming no dimension, and other braces, alone", () => {
    expect(interpolateMatrix("{{matrix.nope}} {{other}} {{ matrix", { os: "b" })).toBe(
      "{{matrix.nope}} {{other}} {{ matrix",
    );
  });
  it("does not read $ patterns of the value as replacement patterns", () => {
    expect(interpolateMatrix("x={{matrix}}", { "": "$&$1" })).toBe("x=$&$1");
  });
});

describe("matrixCombinations", () => {
  it("keeps a duplicate value's combination once", () => {
    expect(matrixCombinations({ setup: { "": ["a", "a", "b"] } }).map((c) => c.permutation)).toEqual([
      { "": "a" },
      { "": "b" },
    ]);
  });
  it("a skip with a reason skips; skip: false does not; a skipped new combination is not added", () => {
    const combos = matrixCombinations({
      setup: { "": ["a", "b", "c"] },
      adjustments: [
        { with: { "": "a" }, skip: "flaky" },
        { with: { "": "b" }, skip: false },
        { with: { "": "z" }, skip: true },
      ],
    });
    expect(combos.map((c) => c.permutation[""])).toEqual(["b", "c"]);
  });
  it("soft_fail exit statuses of an adjustment apply to its combination only", () => {
    const combos = matrixCombinations({
      setup: { os: ["l", "w"] },
      adjustments: [{ with: { os: "w" }, soft_fail: [1, "*"] }],
    });
    expect(combos).toEqual([{ permutation: { os: "l" } }, { permutation: { os: "w" }, soft_fail: [1, "*"] }]);
  });
});

describe("expanding a step", () => {
  it("interpolates plugins' names and settings, deep", () => {
    const step = script(`
steps:
  - command: test
    plugins:
      - docker#v5.0.0:
          image: "node:{{matrix}}"
          environment: ["V={{matrix}}"]
    matrix: ["18", "20"]
`);
    const jobs = expandMatrix(step) ?? [];
    expect(jobs[1]?.step.plugins).toEqual([{ "docker#v5.0.0": { image: "node:20", environment: ["V=20"] } }]);
    expect(step.plugins).toEqual([{ "docker#v5.0.0": { image: "node:{{matrix}}", environment: ["V={{matrix}}"] } }]);
  });
  it("a step without matrix is not expanded", () => {
    expect(expandMatrix(script("steps:\n  - command: x"))).toBeNull();
    expect(matrixJobCount(script("steps:\n  - command: x"))).toBe(1);
  });
  it("a step's soft_fail stays where no adjustment replaces it", () => {
    const jobs =
      expandMatrix(
        script(
          "steps:\n  - command: x\n    soft_fail: [{exit_status: 3}]\n    matrix:\n      setup: {os: [a, b]}\n      adjustments:\n        - with: {os: b}\n          soft_fail: true",
        ),
      ) ?? [];
    expect(jobs.map((j) => j.step.soft_fail)).toEqual([[3], true]);
  });
  it("counts matrix jobs in a build's jobs", () => {
    const result = parsePipelineYaml(`${PLAN9}\n- wait`);
    if (!result.ok) throw new Error("expected success");
    expect(jobCount(result.steps)).toBe(10);
  });
});

describe("refusals", () => {
  const values = (n: number) => `[${Array.from({ length: n }, (_, i) => `v${i}`).join(", ")}]`;

  it(`refuses more than ${MATRIX_LIMITS.maxDimensions} dimensions`, () => {
    const setup = Array.from({ length: 7 }, (_, i) => `d${i}: [a]`).join(", ");
    expect(errors(`steps:\n  - command: x\n    matrix:\n      setup: {${setup}}`)).toEqual([
      { field: "configuration.steps[0].matrix.setup", code: "has 7 dimensions; a matrix may have at most 6" },
    ]);
    expect(() =>
      script(`steps:\n  - command: x\n    matrix:\n      setup: {${setup.replace(", d6: [a]", "")}}`),
    ).not.toThrow();
  });

  it(`refuses more than ${MATRIX_LIMITS.maxValuesPerDimension} values in a dimension`, () => {
    expect(errors(`steps:\n  - command: x\n    matrix: ${values(21)}`)).toEqual([
      { field: "configuration.steps[0].matrix", code: "has 21 values; a matrix dimension may have at most 20" },
    ]);
    expect(errors(`steps:\n  - command: x\n    matrix:\n      setup:\n        os: ${values(21)}`)[0]?.field).toBe(
      "configuration.steps[0].matrix.setup.os",
    );
    expect(matrixJobCount(script(`steps:\n  - command: x\n    matrix: ${values(20)}`))).toBe(20);
  });

  it(`refuses more than ${MATRIX_LIMITS.maxAdjustments} adjustments`, () => {
    const adj = (n: number) =>
      Array.from({ length: n }, (_, i) => `        - with: v${i}\n          soft_fail: true`).join("\n");
    const yaml = (n: number) =>
      `steps:\n  - command: x\n    matrix:\n      setup: ${values(13)}\n      adjustments:\n${adj(n)}`;
    expect(errors(yaml(13))).toEqual([
      { field: "configuration.steps[0].matrix.adjustments", code: "has 13 adjustments; a matrix may have at most 12" },
    ]);
    expect(matrixJobCount(script(yaml(12)))).toBe(13);
  });

  it(`refuses a matrix making more than ${MATRIX_LIMITS.maxJobs} jobs, counting added combinations`, () => {
    expect(errors(`steps:\n  - command: x\n    matrix:\n      setup: {a: ${values(6)}, b: ${values(9)}}`)).toEqual([
      { field: "configuration.steps[0].matrix", code: "makes 54 jobs; a matrix step may make at most 50" },
    ]);
    const fifty = `steps:\n  - command: x\n    matrix:\n      setup: {a: ${values(7)}, b: ${values(7)}}\n      adjustments:\n        - with: {a: x, b: y}`;
    expect(matrixJobCount(script(fifty))).toBe(50);
    expect(errors(fifty.replace("{a: x, b: y}", "{a: x, b: y}\n        - with: {a: x, b: z}"))[0]?.code).toBe(
      "makes 51 jobs; a matrix step may make at most 50",
    );
  });

  it("refuses a matrix whose every combination is skipped", () => {
    expect(
      errors(
        "steps:\n  - command: x\n    matrix:\n      setup: [a]\n      adjustments:\n        - with: a\n          skip: true",
      ),
    ).toEqual([
      { field: "configuration.steps[0].matrix", code: "skips every combination, so the step would make no jobs" },
    ]);
  });

  it("refuses tokens naming no dimension, per attribute", () => {
    expect(errors("steps:\n  - command: echo {{matrix.os}}\n    matrix: [a]")).toEqual([
      {
        field: "configuration.steps[0].command",
        code: "uses {{matrix.os}}, which the matrix does not define; this matrix is a plain list: write {{matrix}}",
      },
    ]);
    expect(errors("steps:\n  - label: '{{matrix}}'\n    command: x\n    matrix:\n      setup: {os: [a]}")).toEqual([
      {
        field: "configuration.steps[0].label",
        code: "uses {{matrix}}, which the matrix does not define; this matrix's dimensions are {{matrix.os}}",
      },
    ]);
    for (const [attr, yaml] of [
      ["env", "env: {A: '{{matrix.x}}'}"],
      ["agents", "agents: {queue: '{{matrix.x}}'}"],
      ["plugins", "plugins: [{'p#v1': {a: '{{matrix.x}}'}}]"],
    ]) {
      expect(errors(`steps:\n  - command: x\n    ${yaml}\n    matrix: [a]`).map((e) => e.field)).toEqual([
        `configuration.steps[0].${attr}`,
      ]);
    }
  });

  it("refuses tokens where Buildkite does not replace them", () => {
    for (const [attr, yaml] of [
      ["key", "key: 'k-{{matrix}}'"],
      ["artifact_paths", "artifact_paths: 'out/{{matrix}}/*'"],
      ["if", "if: build.branch == '{{matrix}}'"],
      ["env.V_{{matrix}}", "env: {'V_{{matrix}}': x}"],
    ]) {
      expect(errors(`steps:\n  - command: x\n    ${yaml}\n    matrix: [a]`).map((e) => e.field)).toEqual([
        `configuration.steps[0].${attr}`,
      ]);
    }
  });

  it("leaves tokens in a step without matrix as they are", () => {
    expect(script("steps:\n  - command: echo {{matrix}}").command).toBe("echo {{matrix}}");
  });
});
