import type { PipelineStep, StepError } from "./step.js";
import { parseVisualSteps } from "./visual-steps.js";

function ok(input: unknown): PipelineStep[] {
  const result = parseVisualSteps(input);
  if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.errors)}`);
  expect(result.env).toEqual({});
  return result.steps;
}

function errors(input: unknown): StepError[] {
  const result = parseVisualSteps(input);
  if (result.ok) throw new Error(`expected errors, got ${JSON.stringify(result.steps)}`);
  return result.errors;
}

function errorAt(input: unknown, field: string): string {
  const found = errors(input);
  const at = found.find((e) => e.field === field);
  if (!at) throw new Error(`no error at ${field}; errors: ${JSON.stringify(found)}`);
  return at.code;
}

describe("parseVisualSteps", () => {
  it("reads the four step types of the spec", () => {
    expect(
      ok([
        {
          type: "script",
          name: "Build :hammer:",
          command: "make",
          artifact_paths: "dist/*",
          branch_configuration: "main release/*",
          env: { A: "b" },
          timeout_in_minutes: 30,
          agent_query_rules: ["queue=default", "os=linux"],
          concurrency: 2,
          concurrency_group: "deploys",
          parallelism: 3,
        },
        { type: "waiter" },
        { type: "manual", label: "Deploy?" },
        {
          type: "trigger",
          label: "Trigger deploy",
          trigger_project_slug: "deploy-app",
          trigger_commit: "HEAD",
          trigger_branch: "main",
          trigger_async: true,
        },
      ]),
    ).toEqual([
      {
        type: "script",
        name: "Build :hammer:",
        command: "make",
        artifact_paths: "dist/*",
        branch_configuration: "main release/*",
        env: { A: "b" },
        timeout_in_minutes: 30,
        agent_query_rules: ["queue=default", "os=linux"],
        concurrency: 2,
        concurrency_group: "deploys",
        parallelism: 3,
      },
      { type: "waiter" },
      { type: "manual", label: "Deploy?" },
      {
        type: "trigger",
        label: "Trigger deploy",
        pipeline: "deploy-app",
        build: { commit: "HEAD", branch: "main" },
        async: true,
      },
    ]);
  });

  it("fills defaults for optional fields", () => {
    expect(
      ok([{ type: "script", command: "make" }, { type: "manual" }, { type: "trigger", trigger_project_slug: "other" }]),
    ).toEqual([
      { type: "script", name: "", command: "make", agent_query_rules: [] },
      { type: "manual", label: "" },
      { type: "trigger", label: "", pipeline: "other", async: false },
    ]);
  });

  it("treats null optional fields as absent", () => {
    expect(
      ok([
        {
          type: "script",
          name: null,
          command: "make",
          artifact_paths: null,
          branch_configuration: null,
          env: null,
          timeout_in_minutes: null,
          agent_query_rules: null,
          concurrency: null,
          parallelism: null,
        },
        {
          type: "trigger",
          label: null,
          trigger_project_slug: "x",
          trigger_commit: null,
          trigger_branch: null,
          trigger_async: null,
        },
      ]),
    ).toEqual([
      { type: "script", name: "", command: "make", agent_query_rules: [] },
      { type: "trigger", label: "", pipeline: "x", async: false },
    ]);
  });

  it("accepts what the REST API renders (label, pipeline, build, async, key, depends_on, if)", () => {
    expect(
      ok([
        {
          type: "script",
          label: "Build",
          command: ["make", "make test"],
          key: "build",
          agent_query_rules: { queue: "q" },
        },
        {
          type: "trigger",
          label: "Go",
          pipeline: "deploy",
          build: { message: "m", branch: "main", commit: "abc", env: { A: 1 } },
          async: true,
          depends_on: [{ step: "build", allow_failure: true }],
          if: "build.branch == 'main'",
          allow_dependency_failure: true,
        },
        { type: "wait", continue_on_failure: true },
        { type: "block", label: "b", prompt: "Sure?" },
        { type: "input", label: "i" },
        { type: "command", command: "x", depends_on: "build" },
      ]),
    ).toEqual([
      { type: "script", name: "Build", command: "make\nmake test", key: "build", agent_query_rules: ["queue=q"] },
      {
        type: "trigger",
        label: "Go",
        pipeline: "deploy",
        build: { message: "m", branch: "main", commit: "abc", env: { A: "1" } },
        async: true,
        depends_on: [{ step: "build", allow_failure: true }],
        if: "build.branch == 'main'",
        allow_dependency_failure: true,
      },
      { type: "waiter", continue_on_failure: true },
      { type: "manual", label: "b", prompt: "Sure?" },
      { type: "manual", label: "i", is_input: true },
      {
        type: "script",
        name: "",
        command: "x",
        agent_query_rules: [],
        depends_on: [{ step: "build", allow_failure: false }],
      },
    ]);
  });

  it("lets trigger_commit and trigger_branch win over build", () => {
    expect(
      ok([
        {
          type: "trigger",
          trigger_project_slug: "x",
          build: { commit: "a", branch: "b" },
          trigger_commit: "c",
          trigger_branch: "d",
        },
      ]),
    ).toEqual([{ type: "trigger", label: "", pipeline: "x", async: false, build: { commit: "c", branch: "d" } }]);
  });

  it("takes numbers and booleans where strings are expected as their text", () => {
    expect(ok([{ type: "script", name: 7, command: "x", branch_configuration: 5 }])).toEqual([
      { type: "script", name: "7", command: "x", agent_query_rules: [], branch_configuration: "5" },
    ]);
  });

  it("stringifies numbers and booleans in env", () => {
    expect(ok([{ type: "script", command: "x", env: { N: 1, B: false, S: "s" } }])).toEqual([
      { type: "script", name: "", command: "x", agent_query_rules: [], env: { N: "1", B: "false", S: "s" } },
    ]);
  });

  it("joins a list of artifact paths with ;", () => {
    expect(ok([{ type: "script", command: "x", artifact_paths: ["a/*", "b/*"] }])).toEqual([
      { type: "script", name: "", command: "x", agent_query_rules: [], artifact_paths: "a/*;b/*" },
    ]);
  });

  describe("errors", () => {
    it("refuses a body that is not a list", () => {
      expect(errors({ type: "script" })).toEqual([
        { field: "steps", code: "must be a list of step objects, got a mapping" },
      ]);
      expect(errors("wait")).toEqual([{ field: "steps", code: 'must be a list of step objects, got "wait"' }]);
      expect(errors(undefined)).toEqual([{ field: "steps", code: "must be a list of step objects, got nothing" }]);
    });

    it("refuses an empty list", () => {
      expect(errors([])).toEqual([{ field: "steps", code: "must contain at least one step" }]);
    });

    it("refuses a step that is not an object", () => {
      expect(errorAt(["wait"], "steps[0]")).toBe('must be a step object with a `type`, got "wait"');
      expect(errorAt([null], "steps[0]")).toMatch(/got nothing/);
    });

    it("requires a known type", () => {
      expect(errorAt([{ command: "x" }], "steps[0].type")).toBe(
        'is required: one of "script", "waiter", "manual" or "trigger"',
      );
      expect(errorAt([{ type: "group" }], "steps[0].type")).toBe(
        'must be "script", "waiter", "manual" or "trigger", got "group"',
      );
      expect(errorAt([{ type: 1 }], "steps[0].type")).toMatch(/got 1/);
    });

    it("requires a script's command", () => {
      expect(errorAt([{ type: "waiter" }, { type: "script", name: "x" }], "steps[1].command")).toBe(
        "is required: the command the step runs",
      );
      expect(errorAt([{ type: "script", command: "  " }], "steps[0].command")).toBe("must not be empty");
      expect(errorAt([{ type: "script", command: { run: "x" } }], "steps[0].command")).toBe(
        "must be a string or a list of strings, got a mapping",
      );
    });

    it("checks a script's field types", () => {
      const base = { type: "script", command: "x" };
      expect(errorAt([{ ...base, name: ["a"] }], "steps[0].name")).toBe("must be a string, got a list");
      expect(errorAt([{ ...base, timeout_in_minutes: "10" }], "steps[0].timeout_in_minutes")).toBe(
        'must be a positive integer, got "10"',
      );
      expect(errorAt([{ ...base, timeout_in_minutes: 0 }], "steps[0].timeout_in_minutes")).toBe(
        "must be a positive integer, got 0",
      );
      expect(errorAt([{ ...base, parallelism: 1.5 }], "steps[0].parallelism")).toBe(
        "must be an integer from 1 to 500, got 1.5",
      );
      expect(errorAt([{ ...base, parallelism: 10 ** 12 }], "steps[0].parallelism")).toBe(
        "must be an integer from 1 to 500, got 1000000000000",
      );
      expect(errorAt([{ ...base, env: { A: { b: 1 } } }], "steps[0].env.A")).toBe(
        "must be a string, number or boolean, got a mapping",
      );
      expect(errorAt([{ ...base, env: ["A=1"] }], "steps[0].env")).toMatch(/must be a mapping/);
      expect(errorAt([{ ...base, agent_query_rules: ["linux"] }], "steps[0].agent_query_rules[0]")).toMatch(
        /key=value/,
      );
      expect(errorAt([{ ...base, agent_query_rules: "queue=x" }], "steps[0].agent_query_rules")).toMatch(
        /must be a mapping/,
      );
      expect(errorAt([{ ...base, branch_configuration: "!" }], "steps[0].branch_configuration")).toMatch(
        /^is not a valid branch filter: it contains an empty negation/,
      );
      expect(errorAt([{ ...base, branch_configuration: ["main"] }], "steps[0].branch_configuration")).toBe(
        "must be a string, got a list",
      );
    });

    it("requires concurrency_group with concurrency", () => {
      expect(errorAt([{ type: "script", command: "x", concurrency: 2 }], "steps[0].concurrency")).toMatch(
        /^requires `concurrency_group`/,
      );
      expect(errorAt([{ type: "script", command: "x", concurrency_group: "g" }], "steps[0].concurrency_group")).toMatch(
        /^requires `concurrency`/,
      );
    });

    it("requires a trigger's pipeline slug", () => {
      expect(errorAt([{ type: "trigger", label: "x" }], "steps[0].trigger_project_slug")).toBe(
        "is required: the slug of the pipeline to trigger",
      );
      expect(errorAt([{ type: "trigger", trigger_project_slug: "" }], "steps[0].trigger_project_slug")).toBe(
        "must not be empty",
      );
    });

    it("checks a trigger's field types", () => {
      const base = { type: "trigger", trigger_project_slug: "x" };
      expect(errorAt([{ ...base, trigger_async: "yes" }], "steps[0].trigger_async")).toBe(
        'must be true or false, got "yes"',
      );
      expect(errorAt([{ ...base, trigger_commit: {} }], "steps[0].trigger_commit")).toBe(
        "must be a string, got a mapping",
      );
      expect(errorAt([{ ...base, build: "main" }], "steps[0].build")).toMatch(/must be an object/);
    });

    it("checks a manual step's label", () => {
      expect(errorAt([{ type: "manual", label: ["a"] }], "steps[0].label")).toBe("must be a string, got a list");
    });

    it("checks keys and dependencies", () => {
      expect(
        errorAt(
          [
            { type: "waiter", key: "a" },
            { type: "waiter", key: "a" },
          ],
          "steps[1].key",
        ),
      ).toBe('"a" is already the key of steps[0]; keys must be unique within the pipeline');
      expect(errorAt([{ type: "waiter", key: "0190a6f2-3b4c-7d8e-9f00-112233445566" }], "steps[0].key")).toMatch(
        /UUID/,
      );
      expect(errorAt([{ type: "waiter", depends_on: "nope" }], "steps[0].depends_on")).toMatch(
        /not the key of any step/,
      );
      expect(errorAt([{ type: "waiter", key: "a", depends_on: "a" }], "steps[0].depends_on")).toMatch(
        /cannot depend on itself/,
      );
    });

    it("refuses branch_configuration with if", () => {
      expect(
        errorAt(
          [{ type: "script", command: "x", if: "build.tag != null", branch_configuration: "main" }],
          "steps[0].branch_configuration",
        ),
      ).toMatch(/^cannot be used together with `if`/);
    });

    it("reports every problem with its index", () => {
      expect(
        errors([
          { type: "script", command: "x", parallelism: 0 },
          { type: "waiter" },
          { type: "trigger" },
          { type: "bogus" },
        ]).map((e) => e.field),
      ).toEqual(["steps[0].parallelism", "steps[2].trigger_project_slug", "steps[3].type"]);
    });
  });

  it("reads plugins as go-buildkite sends them (a map), into the list form", () => {
    expect(ok([{ type: "script", command: "x", plugins: { "docker#v5.0.0": { image: "node" } } }])).toEqual([
      {
        type: "script",
        name: "",
        command: "x",
        agent_query_rules: [],
        plugins: [{ "docker#v5.0.0": { image: "node" } }],
      },
    ]);
  });

  it("refuses fields a kind of visual step does not read, naming them; the YAML's own point to configuration", () => {
    const result = parseVisualSteps([
      { type: "waiter", colour: "blue" },
      { type: "script", command: "x", matrix: ["a"], retry: { manual: false }, cache: "x" },
    ]);
    expect(result.ok ? [] : result.errors).toEqual([
      {
        field: "steps[0].colour",
        code: expect.stringMatching(/^is not an attribute of a visual waiter step \(it has key, /),
      },
      { field: "steps[1].matrix", code: expect.stringMatching(/^is taken in YAML configuration only/) },
      { field: "steps[1].retry", code: expect.stringMatching(/^is taken in YAML configuration only/) },
      { field: "steps[1].cache", code: expect.stringMatching(/^is not supported by this server/) },
    ]);
  });
});
