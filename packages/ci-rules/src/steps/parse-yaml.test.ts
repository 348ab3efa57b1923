import { MISSING_STEPS, parsePipelineYaml } from "./parse-yaml.js";
import type { ManualStep, PipelineStep, ScriptStep, StepError, TriggerStep, WaiterStep } from "./step.js";

function parsed(yaml: string): { steps: PipelineStep[]; env: Record<string, string> } {
  const result = parsePipelineYaml(yaml);
  if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.errors)}`);
  return result;
}

function steps(yaml: string): PipelineStep[] {
  return parsed(yaml).steps;
}

function first(yaml: string): PipelineStep {
  const all = steps(yaml);
  expect(all.length).toBeGreaterThan(0);
  return all[0] as PipelineStep;
}

function script(yaml: string): ScriptStep {
  const step = first(yaml);
  expect(step.type).toBe("script");
  return step as ScriptStep;
}

function errors(yaml: string): StepError[] {
  const result = parsePipelineYaml(yaml);
  if (result.ok) throw new Error(`expected errors, got ${JSON.stringify(result.steps)}`);
  return result.errors;
}

/** The single error's code, checking its field. */
function errorAt(yaml: string, field: string): string {
  const found = errors(yaml);
  const at = found.filter((e) => e.field === field);
  if (at.length === 0) throw new Error(`no error at ${field}; errors: ${JSON.stringify(found)}`);
  return (at[0] as StepError).code;
}

/** A one-step pipeline whose step has the given YAML lines (indented under `- `). */
function step(lines: string): string {
  const body = lines
    .trim()
    .split("\n")
    .map((line, i) => (i === 0 ? `  - ${line}` : `    ${line}`))
    .join("\n");
  return `steps:\n${body}\n`;
}

describe("top level", () => {
  it("accepts a mapping with steps", () => {
    expect(steps("steps:\n  - command: make\n")).toEqual([
      { type: "script", name: "", command: "make", agent_query_rules: [] },
    ]);
  });

  it("accepts a bare list of steps", () => {
    expect(steps("- command: make\n- wait\n")).toEqual([
      { type: "script", name: "", command: "make", agent_query_rules: [] },
      { type: "waiter" },
    ]);
  });

  it("returns an empty env when none is given", () => {
    expect(parsed("steps: [wait]").env).toEqual({});
    expect(parsed("- wait").env).toEqual({});
  });

  it.each([
    ["an empty document", ""],
    ["only whitespace", "   \n\n"],
    ["only comments", "# nothing here\n"],
    ["a null document", "~\n"],
    ["a mapping without steps", "env:\n  A: b\n"],
    ["steps: ~", "steps: ~\n"],
    ["steps: []", "steps: []\n"],
    ["an empty bare list", "[]\n"],
  ])("reports missing steps for %s", (_, yaml) => {
    expect(errors(yaml)).toEqual([{ field: "configuration", code: MISSING_STEPS }]);
  });

  it("says exactly what is missing", () => {
    expect(MISSING_STEPS).toBe("Step configuration is missing, expected a top-level `steps:` list");
  });

  it("refuses steps that are not a list", () => {
    expect(errorAt("steps:\n  command: make\n", "configuration.steps")).toBe("must be a list of steps, got a mapping");
    expect(errorAt("steps: make\n", "configuration.steps")).toBe('must be a list of steps, got "make"');
  });

  it("refuses a scalar document", () => {
    expect(errorAt("just some text\n", "configuration")).toMatch(
      /must be a mapping with a `steps:` list, or a list of steps; got "just some text"/,
    );
    expect(errorAt("42\n", "configuration")).toMatch(/got 42/);
  });

  it("reads notify (../notify/notify.test.ts) and ignores unknown top-level keys", () => {
    const result = parsed("notify:\n  - email: dev@example.com\nfoo: bar\nsteps:\n  - command: make\n");
    expect(result.steps).toHaveLength(1);
    expect(result.env).toEqual({});
    expect(parsePipelineYaml("notify:\n  - email: dev@example.com\nsteps:\n  - command: make\n")).toMatchObject({
      notify: [{ type: "email", address: "dev@example.com" }],
    });
  });

  it("is a pure function: the same input gives equal, independent results", () => {
    const yaml = "agents: {queue: q}\nsteps:\n  - command: a\n  - command: b\n";
    const a = steps(yaml);
    const b = steps(yaml);
    expect(a).toEqual(b);
    (a[0] as ScriptStep).agent_query_rules.push("x=y");
    expect((a[1] as ScriptStep).agent_query_rules).toEqual(["queue=q"]);
    expect((b[0] as ScriptStep).agent_query_rules).toEqual(["queue=q"]);
  });
});

describe("top-level env", () => {
  it("refuses a __proto__ name instead of losing it, in the pipeline's env and a step's", () => {
    expect(errorAt("env:\n  __proto__: x\nsteps: [wait]\n", "configuration.env.__proto__")).toBe("is a reserved name");
    expect(errors(step("command: make\nenv:\n  __proto__: x")).map((e) => e.code)).toContain("is a reserved name");
  });

  it("keeps strings and stringifies numbers and booleans as written", () => {
    const { env } = parsed(
      [
        "env:",
        "  NAME: hello",
        "  QUOTED: '007'",
        "  INT: 3",
        "  FLOAT: 1.10",
        "  HEX: 0x1F",
        "  TRUE: true",
        "  FALSE: false",
        "  YES: yes",
        "  EMPTY: ''",
        "  NULL: ~",
        "  MULTI: |",
        "    line 1",
        "    line 2",
        "steps: [wait]",
      ].join("\n"),
    );
    expect(env).toEqual({
      NAME: "hello",
      QUOTED: "007",
      INT: "3",
      FLOAT: "1.10",
      HEX: "0x1F",
      TRUE: "true",
      FALSE: "false",
      YES: "yes",
      EMPTY: "",
      NULL: "",
      MULTI: "line 1\nline 2\n",
    });
  });

  it("refuses mapping and list values", () => {
    const found = errors("env:\n  A: {b: c}\n  B: [1, 2]\n  C: ok\nsteps: [wait]\n");
    expect(found).toEqual([
      { field: "configuration.env.A", code: "must be a string, number or boolean, got a mapping" },
      { field: "configuration.env.B", code: "must be a string, number or boolean, got a list" },
    ]);
  });

  it("refuses an env that is not a mapping", () => {
    expect(errorAt("env: [A=b]\nsteps: [wait]\n", "configuration.env")).toBe(
      "must be a mapping of names to string values, got a list",
    );
  });

  it("treats env: ~ as empty", () => {
    expect(parsed("env: ~\nsteps: [wait]\n").env).toEqual({});
  });
});

describe("top-level agents", () => {
  const yaml = [
    "agents:",
    "  queue: builders",
    "  os: linux",
    "steps:",
    "  - command: a",
    "  - command: b",
    "    agents: {queue: deploy}",
    "  - wait",
    "  - trigger: other",
    "  - group: g",
    "    steps:",
    "      - command: c",
  ].join("\n");

  it("applies to command steps without agents of their own", () => {
    const all = steps(yaml);
    expect((all[0] as ScriptStep).agent_query_rules).toEqual(["queue=builders", "os=linux"]);
    expect((all[4] as ScriptStep).agent_query_rules).toEqual(["queue=builders", "os=linux"]);
  });

  it("does not merge into a step's own agents", () => {
    expect((steps(yaml)[1] as ScriptStep).agent_query_rules).toEqual(["queue=deploy"]);
  });

  it("does not touch other step types", () => {
    const all = steps(yaml);
    expect(all[2]).toEqual({ type: "waiter" });
    expect(all[3]).not.toHaveProperty("agent_query_rules");
  });

  it("accepts the list form", () => {
    expect(script("agents: [queue=x]\nsteps:\n  - command: a\n").agent_query_rules).toEqual(["queue=x"]);
  });

  it("reports invalid defaults", () => {
    expect(errorAt("agents: linux\nsteps: [wait]\n", "configuration.agents")).toMatch(/must be a mapping/);
  });
});

describe("YAML syntax", () => {
  it("reports the line, column and the parser's message", () => {
    const [error] = errors("steps:\n  - command: make\n   label: oops\n");
    expect(error?.field).toBe("configuration");
    expect(error?.code).toMatch(/^YAML syntax error at line 3, column \d+: \S/);
    expect(error?.code).not.toMatch(/\n/);
  });

  it("reports an unclosed flow sequence", () => {
    const [error] = errors("steps: [wait\n");
    expect(error?.code).toMatch(/^YAML syntax error at line \d+, column \d+: /);
  });

  it("reports duplicate keys", () => {
    const [error] = errors("steps:\n  - command: a\n    command: b\n");
    expect(error?.code).toMatch(/^YAML syntax error at line 3, column 5: Map keys must be unique/);
  });

  it("reports several documents in one string", () => {
    expect(errors("steps: [wait]\n---\nsteps: [wait]\n")[0]?.code).toMatch(
      /^YAML syntax error at line 2, column 1: Source contains multiple documents/,
    );
  });

  it("reports an unknown alias with its location", () => {
    expect(errors("steps:\n  - *missing\n")[0]?.code).toMatch(
      /^YAML syntax error at line 2, column 5: Unresolved alias .*missing/,
    );
  });

  it("refuses alias bombs quickly", () => {
    const bomb = [
      "a: &a [x, x, x, x, x, x, x, x, x, x]",
      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]",
      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]",
      "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]",
      "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]",
      "steps: [wait]",
    ].join("\n");
    const started = Date.now();
    const [error] = errors(bomb);
    expect(error?.field).toBe("configuration");
    expect(error?.code).toMatch(/alias/i);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("refuses a large node repeated through many aliases, which yaml's own alias count lets through", () => {
    // 100 aliases of one 30 KB node stay within the yaml package's maxAliasCount but would make 3 MB of steps.
    const big = `x${"y".repeat(30_000)}`;
    const source = `anchors: &big ["${big}"]\nsteps:\n${Array.from({ length: 99 }, () => "  - command: echo\n    env: {A: *big}\n").join("")}`;
    expect(errors(source)[0]?.code).toMatch(/^expands past 2097152 bytes through its aliases/);
  });

  it("takes aliases that stay within the bound", () => {
    const source =
      "defaults: &d {queue: fast}\nsteps:\n  - command: a\n    agents: *d\n  - command: b\n    agents: *d\n";
    expect(parsePipelineYaml(source).ok).toBe(true);
  });

  it.each([
    ["flow sequences", (n: number) => `steps: ${"[".repeat(n)}${"]".repeat(n)}`],
    ["flow mappings", (n: number) => `steps: ${"{a: ".repeat(n)}1${"}".repeat(n)}`],
    [
      "block sequences",
      (n: number) => `steps:\n${Array.from({ length: n }, (_, i) => `${" ".repeat(i)}-`).join("\n")} x`,
    ],
  ])("refuses %s nested deeper than 40 levels with a clear reason, fast", (_, nested) => {
    for (const depth of [41, 2000, 20_000]) {
      const source = nested(depth);
      if (source.length > 1024 * 1024) continue;
      const started = Date.now();
      expect(errors(source)).toEqual([{ field: "configuration", code: "nests deeper than 40 levels" }]);
      expect(Date.now() - started).toBeLessThan(2000);
    }
    expect(
      errors(nested(38))
        .map((e) => e.code)
        .join(),
    ).not.toMatch(/nests deeper|stack/i);
  });

  it("never echoes the engine's stack overflow", () => {
    const deep = `steps: ${"[".repeat(20000)}${"]".repeat(20000)}`;
    expect(JSON.stringify(errors(deep))).not.toMatch(/Maximum call stack/);
  });

  it("refuses environment names a process environment cannot hold, and NUL in values", () => {
    const fields = errors(
      'env:\n  "A=B": x\n  "": y\n  "C\\0": z\n  OK.DOTTED: fine\nsteps:\n  - command: x\n    env: {V: "a\\0b"}\n',
    ).map((e) => e.field);
    expect(fields).toEqual([
      "configuration.env.A=B",
      "configuration.env.",
      "configuration.env.C?",
      "configuration.steps[0].env.V",
    ]);
  });

  it("refuses YAML over 1 MiB before reading it", () => {
    const source = `steps:\n  - command: echo ${"x".repeat(1024 * 1024)}\n`;
    expect(errors(source)).toEqual([{ field: "configuration", code: "is too large (maximum is 1048576 bytes)" }]);
  });

  it("refuses a value that is not a string", () => {
    expect(parsePipelineYaml(42 as unknown as string)).toEqual({
      ok: false,
      errors: [{ field: "configuration", code: "must be a string of pipeline YAML" }],
    });
  });

  it("keeps mapping keys as written", () => {
    expect(parsed("env: {TRUE: a, 1.10: b, ~: c, 0x1F: d}\nsteps: [wait]\n").env).toEqual({
      TRUE: "a",
      "1.10": "b",
      "~": "c",
      "0x1F": "d",
    });
  });

  it("supports anchors, aliases and merge keys", () => {
    const all = steps(
      [
        "x-defaults: &defaults",
        "  agents: {queue: q}",
        "  timeout_in_minutes: 10",
        "  env: {A: 1.10}",
        "steps:",
        "  - <<: *defaults",
        "    command: a",
        "  - <<: *defaults",
        "    command: b",
        "    timeout_in_minutes: 20",
      ].join("\n"),
    );
    expect(all).toEqual([
      {
        type: "script",
        name: "",
        command: "a",
        agent_query_rules: ["queue=q"],
        timeout_in_minutes: 10,
        env: { A: "1.10" },
      },
      {
        type: "script",
        name: "",
        command: "b",
        agent_query_rules: ["queue=q"],
        timeout_in_minutes: 20,
        env: { A: "1.10" },
      },
    ]);
  });

  it("accepts JSON, which is YAML", () => {
    expect(steps('{"steps": [{"command": "make", "label": "Build"}, "wait"]}')).toEqual([
      { type: "script", name: "Build", command: "make", agent_query_rules: [] },
      { type: "waiter" },
    ]);
  });
});

describe("step type inference", () => {
  it.each([
    ["command: make", "script"],
    ["commands: [make]", "script"],
    ["plugins: [docker#v5.0.0]", "script"],
    ["wait: ~", "waiter"],
    ["waiter: ~", "waiter"],
    ['wait: ""', "waiter"],
    ["block: Deploy?", "manual"],
    ["input: Details", "manual"],
    ["manual: Deploy?", "manual"],
    ["trigger: other", "trigger"],
  ])("%s → %s", (line, type) => {
    expect(first(step(line)).type).toBe(type);
  });

  it.each([
    ["script", "script"],
    ["command", "script"],
    ["commands", "script"],
    ["wait", "waiter"],
    ["waiter", "waiter"],
    ["block", "manual"],
    ["manual", "manual"],
    ["input", "manual"],
  ])("explicit type: %s → %s", (type, expected) => {
    expect(first(step(`type: ${type}\nkey: x`)).type).toBe(expected);
  });

  it("explicit type: trigger needs `trigger`", () => {
    expect(first(step("type: trigger\ntrigger: other")).type).toBe("trigger");
    expect(errorAt(step("type: trigger\nlabel: x"), "configuration.steps[0].trigger")).toBe(
      "is required: the slug of the pipeline to trigger",
    );
  });

  it("explicit type: group", () => {
    expect(steps(step("type: group\ngroup: G\nsteps: [wait]"))).toEqual([{ type: "waiter", group: { label: "G" } }]);
  });

  it("explicit type wins over keys, and the other kind's attributes are refused", () => {
    expect(first(step("type: input\nkey: k"))).toEqual({ type: "manual", label: "", key: "k", is_input: true });
    expect(errorAt(step("type: input\ncommand: make"), "configuration.steps[0].command")).toMatch(
      /^is not an attribute of an input step/,
    );
  });

  it("follows go-pipeline's order when several keys are present, refusing the other kind's key", () => {
    expect(errorAt(step("command: make\ntrigger: other"), "configuration.steps[0].trigger")).toMatch(
      /^is not an attribute of a command step/,
    );
    expect(errorAt(step("wait: ~\nblock: b"), "configuration.steps[0].block")).toMatch(/ a wait step/);
    expect(errorAt(step("block: b\ntrigger: t"), "configuration.steps[0].trigger")).toMatch(/ a block step/);
  });

  it("refuses an unknown explicit type", () => {
    expect(errorAt(step("type: deploy\ncommand: x"), "configuration.steps[0].type")).toBe(
      '"deploy" is not a step type; use one of command, wait, block, input, trigger or group',
    );
    expect(errorAt(step("type: 3\ncommand: x"), "configuration.steps[0].type")).toMatch(/^3 is not a step type/);
  });

  it("names the keys found when no type can be inferred", () => {
    expect(errorAt(step("label: Build\nscript: make"), "configuration.steps[0]")).toBe(
      "is not a known kind of step: found `label` and `script`, but a step needs one of command, commands, plugins, wait, block, input, trigger or group",
    );
    expect(errorAt(step("foo: 1\nbar: 2\nbaz: 3"), "configuration.steps[0]")).toMatch(/found `foo`, `bar` and `baz`/);
  });

  it("refuses an empty mapping", () => {
    expect(errorAt("steps:\n  - {}\n", "configuration.steps[0]")).toMatch(/^is an empty mapping/);
  });

  it("accepts scalar steps", () => {
    expect(steps("steps: [wait, waiter, block, input]")).toEqual([
      { type: "waiter" },
      { type: "waiter" },
      { type: "manual", label: "" },
      { type: "manual", label: "", is_input: true },
    ]);
  });

  it("refuses other scalar steps with a hint", () => {
    expect(errorAt("steps:\n  - echo hello\n", "configuration.steps[0]")).toBe(
      'is the string "echo hello", but a step written as a string must be "wait", "block" or "input"; to run a command write `- command: ...`',
    );
  });

  it.each([
    ["null", "steps:\n  - ~\n", "nothing"],
    ["a number", "steps:\n  - 42\n", "42"],
    ["a list", "steps:\n  - [a, b]\n", "a list"],
    ["a boolean", "steps:\n  - true\n", "true"],
  ])("refuses a step that is %s", (_, yaml, described) => {
    expect(errorAt(yaml, "configuration.steps[0]")).toBe(
      `must be a step (a mapping such as \`command: ...\`) or "wait", "block" or "input"; got ${described}`,
    );
  });

  it("uses configuration[i] for the steps of a bare list", () => {
    expect(errorAt("- command: a\n- parallelism: 2\n", "configuration[1]")).toMatch(/not a known kind of step/);
  });
});

describe("nested step forms", () => {
  it("wait: {…}", () => {
    expect(first("steps:\n  - wait: {continue_on_failure: true, key: w}\n")).toEqual({
      type: "waiter",
      continue_on_failure: true,
      key: "w",
    });
  });

  it("block: {…}", () => {
    expect(first("steps:\n  - block: {label: Deploy?, prompt: Sure?}\n")).toEqual({
      type: "manual",
      label: "Deploy?",
      prompt: "Sure?",
    });
  });

  it("input: {…}", () => {
    expect(first("steps:\n  - input: {input: Details, key: details}\n")).toEqual({
      type: "manual",
      label: "Details",
      is_input: true,
      key: "details",
    });
  });

  it("command: {…}", () => {
    expect(first("steps:\n  - command: {command: make, label: Build}\n")).toEqual({
      type: "script",
      name: "Build",
      command: "make",
      agent_query_rules: [],
    });
  });

  it("trigger: {…}", () => {
    expect(first("steps:\n  - trigger: {trigger: deploy, async: true}\n")).toEqual({
      type: "trigger",
      label: "",
      pipeline: "deploy",
      async: true,
    });
  });

  it("is not used when the step has other keys", () => {
    expect(errorAt("steps:\n  - command: {a: b}\n    label: x\n", "configuration.steps[0].command")).toBe(
      "must be a string or a list of strings, got a mapping",
    );
  });
});

describe("command step", () => {
  it("reads a full command step", () => {
    const s = script(
      [
        "steps:",
        "  - label: ':hammer: Build'",
        "    key: build",
        "    command: make",
        "    artifact_paths: 'dist/*;logs/*'",
        "    env: {A: b, N: 2}",
        "    timeout_in_minutes: 30",
        "    agents: {queue: builders, os: linux}",
        "    concurrency: 1",
        "    concurrency_group: deploy/prod",
        "    concurrency_method: eager",
        "    parallelism: 4",
        "    priority: -1",
        "    retry:",
        "      automatic: [{exit_status: -1, limit: 3}, {exit_status: '*', signal: SIGKILL, signal_reason: agent_stop, limit: 1}]",
        "      manual: {allowed: false, reason: Deploys cannot be retried, permit_on_passed: true}",
        "    soft_fail: [{exit_status: 1}, {exit_status: '*'}]",
        "    cancel_on_build_failing: true",
        "    skip: Flaky",
        "    if: build.branch == 'main'",
        "    allow_dependency_failure: true",
        "    plugins:",
        "      - docker#v5.12.0: {image: 'node:20'}",
        "      - artifacts#v1.9.0",
      ].join("\n"),
    );
    expect(s).toEqual({
      type: "script",
      name: ":hammer: Build",
      key: "build",
      command: "make",
      artifact_paths: "dist/*;logs/*",
      env: { A: "b", N: "2" },
      timeout_in_minutes: 30,
      agent_query_rules: ["queue=builders", "os=linux"],
      concurrency: 1,
      concurrency_group: "deploy/prod",
      concurrency_method: "eager",
      parallelism: 4,
      priority: -1,
      retry: {
        automatic: [
          { exit_status: [-1], limit: 3 },
          { exit_status: "*", signal: "SIGKILL", signal_reason: "agent_stop", limit: 1 },
        ],
        manual: { allowed: false, reason: "Deploys cannot be retried", permit_on_passed: true },
      },
      soft_fail: [1, "*"],
      cancel_on_build_failing: true,
      skip: "Flaky",
      if: "build.branch == 'main'",
      allow_dependency_failure: true,
      plugins: [{ "docker#v5.12.0": { image: "node:20" } }, { "artifacts#v1.9.0": null }],
    });
  });

  describe("command / commands", () => {
    it("command as a string", () => {
      expect(script(step("command: make test")).command).toBe("make test");
    });

    it("command as a list is joined with newlines", () => {
      expect(script(step("command:\n  - make\n  - make test")).command).toBe("make\nmake test");
    });

    it("commands (alias) as a list", () => {
      expect(script(step("commands: [a, b, c]")).command).toBe("a\nb\nc");
    });

    it("commands as a string", () => {
      expect(script(step("commands: make")).command).toBe("make");
    });

    it("a literal block keeps its newlines", () => {
      expect(script(step("command: |\n  echo a\n  echo b")).command).toBe("echo a\necho b\n");
    });

    it("numbers are taken as written", () => {
      expect(script(step("command: 1.50")).command).toBe("1.50");
    });

    it("null and [] give an empty command", () => {
      expect(script(step("command: ~")).command).toBe("");
      expect(script(step("commands: []")).command).toBe("");
    });

    it("refuses both command and commands", () => {
      expect(errorAt(step("command: a\ncommands: [b]"), "configuration.steps[0]")).toBe(
        "sets both `command` and `commands`; they mean the same, use only one",
      );
    });

    it("refuses non-string list entries", () => {
      expect(errorAt(step("command:\n  - make\n  - {a: b}"), "configuration.steps[0].command[1]")).toBe(
        "must be a string, got a mapping",
      );
    });
  });

  describe("label / name", () => {
    it("label", () => {
      expect(script(step("label: Build\ncommand: x")).name).toBe("Build");
    });

    it("name (alias)", () => {
      expect(script(step("name: Build\ncommand: x")).name).toBe("Build");
    });

    it("defaults to empty", () => {
      expect(script(step("command: x")).name).toBe("");
    });

    it("takes numbers as written", () => {
      expect(script(step("label: 1.0\ncommand: x")).name).toBe("1.0");
    });

    it("refuses both", () => {
      expect(errorAt(step("label: a\nname: b\ncommand: x"), "configuration.steps[0]")).toMatch(
        /sets both `label` and `name`/,
      );
    });

    it("refuses a list", () => {
      expect(errorAt(step("label: [a]\ncommand: x"), "configuration.steps[0].label")).toBe(
        "must be a string, got a list",
      );
    });
  });

  describe("key / id / identifier", () => {
    it.each(["key", "id", "identifier"])("%s", (name) => {
      expect(script(step(`${name}: build\ncommand: x`)).key).toBe("build");
    });

    it("refuses two aliases at once", () => {
      expect(errorAt(step("key: a\nid: b\ncommand: x"), "configuration.steps[0]")).toMatch(/sets both `key` and `id`/);
    });

    it("refuses UUID-shaped keys", () => {
      expect(errorAt(step("key: 0190a6f2-3b4c-7d8e-9f00-112233445566\ncommand: x"), "configuration.steps[0].key")).toBe(
        'must not look like a UUID (got "0190a6f2-3b4c-7d8e-9f00-112233445566"); use a name such as "tests" or "deploy-staging"',
      );
      expect(
        errorAt(step("id: 0190A6F2-3B4C-7D8E-9F00-112233445566\ncommand: x"), "configuration.steps[0].id"),
      ).toMatch(/UUID/);
    });

    it("refuses empty keys", () => {
      expect(errorAt(step("key: ''\ncommand: x"), "configuration.steps[0].key")).toBe("must not be empty");
    });

    it("refuses duplicate keys across steps", () => {
      expect(
        errorAt("steps:\n  - {key: a, command: x}\n  - wait\n  - {key: a, block: b}\n", "configuration.steps[2].key"),
      ).toBe('"a" is already the key of configuration.steps[0]; keys must be unique within the pipeline');
    });

    it("refuses duplicates between aliases", () => {
      expect(
        errorAt(
          "steps:\n  - {key: a, command: x}\n  - {identifier: a, command: y}\n",
          "configuration.steps[1].identifier",
        ),
      ).toMatch(/already the key of configuration.steps\[0\]/);
    });

    it("takes a numeric key as written", () => {
      expect(script(step("key: 1.10\ncommand: x")).key).toBe("1.10");
    });
  });

  describe("depends_on", () => {
    const pipeline = (dependsOn: string) =>
      `steps:\n  - {key: a, command: x}\n  - {key: b, command: y}\n  - command: z\n    depends_on: ${dependsOn}\n`;
    const deps = (dependsOn: string) => (steps(pipeline(dependsOn))[2] as ScriptStep).depends_on;

    it("a string", () => {
      expect(deps("a")).toEqual([{ step: "a", allow_failure: false }]);
    });

    it("a list of strings", () => {
      expect(deps("[a, b]")).toEqual([
        { step: "a", allow_failure: false },
        { step: "b", allow_failure: false },
      ]);
    });

    it("a list of {step, allow_failure}", () => {
      expect(deps("[{step: a, allow_failure: true}, {step: b}]")).toEqual([
        { step: "a", allow_failure: true },
        { step: "b", allow_failure: false },
      ]);
    });

    it("a mixed list", () => {
      expect(deps("[a, {step: b, allow_failure: true}]")).toEqual([
        { step: "a", allow_failure: false },
        { step: "b", allow_failure: true },
      ]);
    });

    it("~ and [] mean explicitly none", () => {
      expect(deps("~")).toEqual([]);
      expect(deps("[]")).toEqual([]);
    });

    it("absent means absent", () => {
      expect(steps(pipeline("~"))[0]).not.toHaveProperty("depends_on");
    });

    it("may name a later step", () => {
      const all = steps("steps:\n  - {command: x, depends_on: later}\n  - {key: later, command: y}\n");
      expect((all[0] as ScriptStep).depends_on).toEqual([{ step: "later", allow_failure: false }]);
    });

    it("must name an existing key", () => {
      expect(errorAt(pipeline("nope"), "configuration.steps[2].depends_on")).toBe(
        'names "nope", which is not the key of any step or group; keys in this pipeline: a, b',
      );
      expect(errorAt(pipeline("[a, nope]"), "configuration.steps[2].depends_on[1]")).toMatch(/"nope"/);
      expect(errorAt("steps:\n  - {command: x, depends_on: a}\n", "configuration.steps[0].depends_on")).toBe(
        'names "a", which is not the key of any step or group; no step in this pipeline has a key',
      );
    });

    it("must not name the step itself", () => {
      expect(errorAt("steps:\n  - {key: a, command: x, depends_on: a}\n", "configuration.steps[0].depends_on")).toBe(
        'names "a", the step\'s own key; a step cannot depend on itself',
      );
    });

    it("must not form a cycle", () => {
      const yaml = [
        "steps:",
        "  - {key: a, command: x, depends_on: c}",
        "  - {key: b, command: x, depends_on: a}",
        "  - {key: c, command: x, depends_on: b}",
      ].join("\n");
      expect(errorAt(yaml, "configuration.steps[0].depends_on")).toBe(
        "forms a dependency cycle (a → c → b → a); remove one of these dependencies",
      );
    });

    it("refuses an entry without step", () => {
      expect(errorAt(pipeline("[{allow_failure: true}]"), "configuration.steps[2].depends_on[0].step")).toBe(
        "is required: the key of the step to wait for",
      );
    });

    it("refuses a non-boolean allow_failure", () => {
      expect(
        errorAt(pipeline("[{step: a, allow_failure: maybe}]"), "configuration.steps[2].depends_on[0].allow_failure"),
      ).toBe('must be true or false, got "maybe"');
    });

    it("refuses a mapping", () => {
      expect(errorAt(pipeline("{step: a}"), "configuration.steps[2].depends_on")).toMatch(/must be a step key/);
    });

    it("refuses list entries that are not keys", () => {
      expect(errorAt(pipeline("[[a]]"), "configuration.steps[2].depends_on[0]")).toMatch(/must be a step key/);
    });
  });

  describe("allow_dependency_failure", () => {
    it("true / false / 'true'", () => {
      expect(script(step("command: x\nallow_dependency_failure: true")).allow_dependency_failure).toBe(true);
      expect(script(step("command: x\nallow_dependency_failure: false")).allow_dependency_failure).toBe(false);
      expect(script(step("command: x\nallow_dependency_failure: 'true'")).allow_dependency_failure).toBe(true);
    });

    it("refuses other values", () => {
      expect(
        errorAt(step("command: x\nallow_dependency_failure: yes"), "configuration.steps[0].allow_dependency_failure"),
      ).toBe('must be true or false, got "yes"');
    });
  });

  describe("agents / agent_query_rules", () => {
    it("a mapping becomes k=v rules, queue included", () => {
      expect(script(step("command: x\nagents:\n  queue: x\n  os: linux")).agent_query_rules).toEqual([
        "queue=x",
        "os=linux",
      ]);
    });

    it("values keep their text", () => {
      expect(
        script(step("command: x\nagents: {ruby: 2.70, docker: true, gpus: 4, any: '*'}")).agent_query_rules,
      ).toEqual(["ruby=2.70", "docker=true", "gpus=4", "any=*"]);
    });

    it("a list of k=v strings", () => {
      expect(script(step("command: x\nagents: [queue=x, os=linux]")).agent_query_rules).toEqual([
        "queue=x",
        "os=linux",
      ]);
    });

    it("agent_query_rules (alias)", () => {
      expect(script(step("command: x\nagent_query_rules: [queue=x]")).agent_query_rules).toEqual(["queue=x"]);
    });

    it("defaults to no rules", () => {
      expect(script(step("command: x")).agent_query_rules).toEqual([]);
    });

    it("refuses both aliases", () => {
      expect(errorAt(step("command: x\nagents: {a: b}\nagent_query_rules: [a=b]"), "configuration.steps[0]")).toMatch(
        /sets both `agents` and `agent_query_rules`/,
      );
    });

    it("refuses list entries without =", () => {
      expect(errorAt(step("command: x\nagents: [linux]"), "configuration.steps[0].agents[0]")).toBe(
        'must be a "key=value" string such as "queue=default", got "linux"',
      );
      expect(errorAt(step("command: x\nagents: ['=x']"), "configuration.steps[0].agents[0]")).toMatch(/key=value/);
    });

    it("refuses list and mapping values", () => {
      expect(errorAt(step("command: x\nagents: {queue: [a, b]}"), "configuration.steps[0].agents.queue")).toBe(
        'must be a string such as "linux" or "*", got a list',
      );
      expect(errorAt(step("command: x\nagents: {queue: ~}"), "configuration.steps[0].agents.queue")).toMatch(
        /got nothing/,
      );
    });

    it("refuses a scalar", () => {
      expect(errorAt(step("command: x\nagents: linux"), "configuration.steps[0].agents")).toMatch(/must be a mapping/);
    });
  });

  describe("env", () => {
    it("stringifies numbers and booleans", () => {
      expect(script(step("command: x\nenv: {A: 1, B: 1.10, C: false, D: ~}")).env).toEqual({
        A: "1",
        B: "1.10",
        C: "false",
        D: "",
      });
    });

    it("refuses nested values", () => {
      expect(errorAt(step("command: x\nenv:\n  A: [1]"), "configuration.steps[0].env.A")).toBe(
        "must be a string, number or boolean, got a list",
      );
    });

    it("refuses a list", () => {
      expect(errorAt(step("command: x\nenv: [A=1]"), "configuration.steps[0].env")).toMatch(/must be a mapping/);
    });
  });

  describe("if", () => {
    it("is kept as written", () => {
      expect(script(step('command: x\nif: build.message !~ /skip ci/ && build.branch == "main"')).if).toBe(
        'build.message !~ /skip ci/ && build.branch == "main"',
      );
    });

    it("blank is ignored", () => {
      expect(script(step("command: x\nif: ''"))).not.toHaveProperty("if");
    });

    it("must be a string", () => {
      expect(errorAt(step("command: x\nif: [a]"), "configuration.steps[0].if")).toBe("must be a string, got a list");
    });
  });

  describe("branches", () => {
    it("a string", () => {
      expect(script(step("command: x\nbranches: main release/*")).branch_configuration).toBe("main release/*");
    });

    it("a list is joined with spaces", () => {
      expect(script(step("command: x\nbranches: [main, 'release/*', '!release/old']")).branch_configuration).toBe(
        "main release/* !release/old",
      );
    });

    it("blank is ignored", () => {
      expect(script(step("command: x\nbranches: ''"))).not.toHaveProperty("branch_configuration");
    });

    it("refuses an invalid pattern", () => {
      expect(errorAt(step("command: x\nbranches: main !"), "configuration.steps[0].branches")).toMatch(
        /^is not a valid branch filter: it contains an empty negation "!"/,
      );
    });

    it("refuses branches together with if", () => {
      expect(
        errorAt(step("command: x\nbranches: main\nif: build.tag != null"), "configuration.steps[0].branches"),
      ).toMatch(/^cannot be used together with `if` on the same step/);
    });

    it("refuses a mapping", () => {
      expect(errorAt(step("command: x\nbranches: {a: b}"), "configuration.steps[0].branches")).toMatch(
        /must be a string or a list/,
      );
    });
  });

  describe("artifact_paths / artifacts", () => {
    it("a string", () => {
      expect(script(step("command: x\nartifact_paths: 'a/*;b/*'")).artifact_paths).toBe("a/*;b/*");
    });

    it("a list is joined with ;", () => {
      expect(script(step("command: x\nartifact_paths: [a/*, b/*]")).artifact_paths).toBe("a/*;b/*");
    });

    it("artifacts (alias)", () => {
      expect(script(step("command: x\nartifacts: [a/*]")).artifact_paths).toBe("a/*");
    });

    it("refuses both", () => {
      expect(errorAt(step("command: x\nartifacts: a\nartifact_paths: b"), "configuration.steps[0]")).toMatch(
        /sets both `artifact_paths` and `artifacts`/,
      );
    });

    it("empty is absent", () => {
      expect(script(step("command: x\nartifact_paths: []"))).not.toHaveProperty("artifact_paths");
    });
  });

  describe("parallelism", () => {
    it("a positive integer", () => {
      expect(script(step("command: x\nparallelism: 5")).parallelism).toBe(5);
    });

    it.each([
      ['"abc"', 'must be an integer from 1 to 500, got "abc"'],
      ["'3'", 'must be an integer from 1 to 500, got "3"'],
      ["0", "must be an integer from 1 to 500, got 0"],
      ["-2", "must be an integer from 1 to 500, got -2"],
      ["1.5", "must be an integer from 1 to 500, got 1.5"],
      ["[1]", "must be an integer from 1 to 500, got a list"],
      ["true", "must be an integer from 1 to 500, got true"],
      ["501", "must be an integer from 1 to 500, got 501"],
      ["1000000000000", "must be an integer from 1 to 500, got 1000000000000"],
    ])("refuses %s", (value, code) => {
      expect(errorAt(step(`command: x\nparallelism: ${value}`), "configuration.steps[0].parallelism")).toBe(code);
    });
  });

  describe("timeout_in_minutes / timeout", () => {
    it("timeout_in_minutes", () => {
      expect(script(step("command: x\ntimeout_in_minutes: 15")).timeout_in_minutes).toBe(15);
    });

    it("timeout (alias)", () => {
      expect(script(step("command: x\ntimeout: 15")).timeout_in_minutes).toBe(15);
    });

    it("refuses 0 and strings", () => {
      expect(errorAt(step("command: x\ntimeout_in_minutes: 0"), "configuration.steps[0].timeout_in_minutes")).toBe(
        "must be a positive integer, got 0",
      );
      expect(errorAt(step("command: x\ntimeout: 10m"), "configuration.steps[0].timeout")).toBe(
        'must be a positive integer, got "10m"',
      );
    });

    it("refuses both", () => {
      expect(errorAt(step("command: x\ntimeout: 1\ntimeout_in_minutes: 2"), "configuration.steps[0]")).toMatch(
        /sets both/,
      );
    });
  });

  describe("concurrency", () => {
    it("with a group and a method", () => {
      const s = script(step("command: x\nconcurrency: 2\nconcurrency_group: g\nconcurrency_method: ordered"));
      expect([s.concurrency, s.concurrency_group, s.concurrency_method]).toEqual([2, "g", "ordered"]);
    });

    it("requires a group", () => {
      expect(errorAt(step("command: x\nconcurrency: 2"), "configuration.steps[0].concurrency")).toMatch(
        /^requires `concurrency_group`/,
      );
    });

    it("bounds the limit and the group's name", () => {
      expect(
        errorAt(step("command: x\nconcurrency: 10001\nconcurrency_group: g"), "configuration.steps[0].concurrency"),
      ).toMatch(/10000/);
      expect(
        errorAt(
          step(`command: x\nconcurrency: 1\nconcurrency_group: ${"g".repeat(256)}`),
          "configuration.steps[0].concurrency_group",
        ),
      ).toBe("is too long (maximum is 255 characters)");
    });

    it("a group requires concurrency", () => {
      expect(errorAt(step("command: x\nconcurrency_group: g"), "configuration.steps[0].concurrency_group")).toMatch(
        /^requires `concurrency`/,
      );
    });

    it("refuses an unknown method", () => {
      expect(
        errorAt(
          step("command: x\nconcurrency: 1\nconcurrency_group: g\nconcurrency_method: fifo"),
          "configuration.steps[0].concurrency_method",
        ),
      ).toBe('must be "ordered" or "eager", got "fifo"');
    });

    it("a method requires concurrency and a group", () => {
      expect(errorAt(step("command: x\nconcurrency_method: eager"), "configuration.steps[0].concurrency_method")).toBe(
        "requires `concurrency` and `concurrency_group`",
      );
    });

    it("refuses a non-integer", () => {
      expect(
        errorAt(step("command: x\nconcurrency: one\nconcurrency_group: g"), "configuration.steps[0].concurrency"),
      ).toBe('must be an integer from 1 to 10000, got "one"');
    });

    it("refuses an empty group", () => {
      expect(
        errorAt(step("command: x\nconcurrency: 1\nconcurrency_group: ''"), "configuration.steps[0].concurrency_group"),
      ).toBe("must not be empty");
    });
  });

  describe("priority", () => {
    it("an integer, possibly negative", () => {
      expect(script(step("command: x\npriority: 10")).priority).toBe(10);
      expect(script(step("command: x\npriority: -5")).priority).toBe(-5);
    });

    it("refuses a string", () => {
      expect(errorAt(step("command: x\npriority: high"), "configuration.steps[0].priority")).toBe(
        'must be an integer, got "high"',
      );
    });
  });

  describe("retry", () => {
    const retry = (yaml: string) => script(step(`command: x\nretry:\n${yaml.replace(/^/gm, "  ")}`)).retry;

    it("automatic: true is the default rule", () => {
      expect(retry("automatic: true")).toEqual({
        automatic: [{ exit_status: "*", signal: "*", signal_reason: "*", limit: 2 }],
      });
      expect(retry("automatic: 'true'")).toEqual(retry("automatic: true"));
    });

    it("automatic: false is no rules", () => {
      expect(retry("automatic: false")).toEqual({ automatic: [] });
    });

    it("one rule", () => {
      expect(retry("automatic:\n  exit_status: 5\n  limit: 3")).toEqual({
        automatic: [{ exit_status: [5], limit: 3 }],
      });
    });

    it("a list of rules", () => {
      expect(retry("automatic:\n  - exit_status: -1\n    limit: 2\n  - exit_status: [1, 143]\n    limit: 1")).toEqual({
        automatic: [
          { exit_status: [-1], limit: 2 },
          { exit_status: [1, 143], limit: 1 },
        ],
      });
    });

    it('exit_status "*" and a missing exit_status match any', () => {
      expect(retry("automatic: [{exit_status: '*', limit: 1}, {limit: 4}]")).toEqual({
        automatic: [
          { exit_status: "*", limit: 1 },
          { exit_status: "*", limit: 4 },
        ],
      });
    });

    it("a missing limit is 2", () => {
      expect(retry("automatic: {exit_status: 1}")).toEqual({ automatic: [{ exit_status: [1], limit: 2 }] });
    });

    it("signal and signal_reason", () => {
      expect(retry("automatic: {signal: SIGTERM, signal_reason: cancel, limit: 1}")).toEqual({
        automatic: [{ exit_status: "*", signal: "SIGTERM", signal_reason: "cancel", limit: 1 }],
      });
    });

    it("limit must be from 1 to 10", () => {
      expect(
        errorAt(step("command: x\nretry: {automatic: {limit: 11}}"), "configuration.steps[0].retry.automatic.limit"),
      ).toBe("must be an integer from 1 to 10, got 11");
      expect(
        errorAt(
          step("command: x\nretry: {automatic: [{limit: 0}]}"),
          "configuration.steps[0].retry.automatic[0].limit",
        ),
      ).toBe("must be an integer from 1 to 10, got 0");
      expect(
        errorAt(step("command: x\nretry: {automatic: {limit: lots}}"), "configuration.steps[0].retry.automatic.limit"),
      ).toBe('must be an integer from 1 to 10, got "lots"');
    });

    it("refuses a bad exit_status", () => {
      expect(
        errorAt(
          step("command: x\nretry: {automatic: {exit_status: any}}"),
          "configuration.steps[0].retry.automatic.exit_status",
        ),
      ).toMatch(/must be an exit status .* got "any"/);
      expect(
        errorAt(
          step("command: x\nretry: {automatic: {exit_status: [1, x]}}"),
          "configuration.steps[0].retry.automatic.exit_status[1]",
        ),
      ).toBe('must be an integer, got "x"');
      expect(
        errorAt(
          step("command: x\nretry: {automatic: {exit_status: []}}"),
          "configuration.steps[0].retry.automatic.exit_status",
        ),
      ).toMatch(/at least one/);
    });

    it("refuses a bad automatic value", () => {
      expect(errorAt(step("command: x\nretry: {automatic: 3}"), "configuration.steps[0].retry.automatic")).toMatch(
        /must be true, false, a retry rule or a list of retry rules; got 3/,
      );
      expect(errorAt(step("command: x\nretry: {automatic: [3]}"), "configuration.steps[0].retry.automatic[0]")).toMatch(
        /must be a retry rule/,
      );
    });

    it("manual: true / false", () => {
      expect(retry("manual: false")).toEqual({ manual: { allowed: false } });
      expect(retry("manual: true")).toEqual({ manual: { allowed: true } });
    });

    it("manual as an object, allowed defaulting to true", () => {
      expect(retry("manual: {permit_on_passed: true}")).toEqual({ manual: { allowed: true, permit_on_passed: true } });
      expect(retry("manual: {allowed: false, reason: No}")).toEqual({ manual: { allowed: false, reason: "No" } });
    });

    it("refuses a bad manual", () => {
      expect(errorAt(step("command: x\nretry: {manual: sometimes}"), "configuration.steps[0].retry.manual")).toBe(
        'must be true or false, got "sometimes"',
      );
      expect(
        errorAt(step("command: x\nretry: {manual: {allowed: 1}}"), "configuration.steps[0].retry.manual.allowed"),
      ).toBe("must be true or false, got 1");
    });

    it("refuses a non-mapping retry", () => {
      expect(errorAt(step("command: x\nretry: true"), "configuration.steps[0].retry")).toMatch(/must be a mapping/);
    });

    it("an empty retry is absent", () => {
      expect(script(step("command: x\nretry: {}"))).not.toHaveProperty("retry");
    });
  });

  describe("soft_fail", () => {
    it("true", () => {
      expect(script(step("command: x\nsoft_fail: true")).soft_fail).toBe(true);
    });

    it("false is absent", () => {
      expect(script(step("command: x\nsoft_fail: false"))).not.toHaveProperty("soft_fail");
    });

    it("a list of exit statuses", () => {
      expect(script(step("command: x\nsoft_fail:\n  - exit_status: 1\n  - exit_status: '*'")).soft_fail).toEqual([
        1,
        "*",
      ]);
    });

    it("refuses entries without exit_status", () => {
      expect(errorAt(step("command: x\nsoft_fail: [{}]"), "configuration.steps[0].soft_fail[0].exit_status")).toMatch(
        /^is required/,
      );
    });

    it("refuses bare numbers", () => {
      expect(errorAt(step("command: x\nsoft_fail: [1]"), "configuration.steps[0].soft_fail[0]")).toBe(
        'must be {exit_status: N} or {exit_status: "*"}, got 1',
      );
    });

    it("refuses a non-integer status", () => {
      expect(
        errorAt(step("command: x\nsoft_fail: [{exit_status: one}]"), "configuration.steps[0].soft_fail[0].exit_status"),
      ).toBe('must be an integer, got "one"');
    });
  });

  describe("skip", () => {
    it("true or a reason", () => {
      expect(script(step("command: x\nskip: true")).skip).toBe(true);
      expect(script(step("command: x\nskip: Broken on CI")).skip).toBe("Broken on CI");
    });

    it("false and '' are absent", () => {
      expect(script(step("command: x\nskip: false"))).not.toHaveProperty("skip");
      expect(script(step("command: x\nskip: ''"))).not.toHaveProperty("skip");
    });

    it("refuses other types", () => {
      expect(errorAt(step("command: x\nskip: 1"), "configuration.steps[0].skip")).toBe(
        "must be true, false or a reason (a string), got 1",
      );
    });
  });

  describe("cancel_on_build_failing", () => {
    it("a boolean", () => {
      expect(script(step("command: x\ncancel_on_build_failing: true")).cancel_on_build_failing).toBe(true);
    });

    it("refuses other values", () => {
      expect(
        errorAt(step("command: x\ncancel_on_build_failing: 1"), "configuration.steps[0].cancel_on_build_failing"),
      ).toBe("must be true or false, got 1");
    });
  });

  describe("plugins", () => {
    it("a list of names and single-key maps; a plugin-only step has an empty command", () => {
      const s = script(
        step(
          "plugins:\n  - docker-compose#v4.0.0:\n      run: app\n      config: [a.yml, b.yml]\n  - ecr#v2.7.0: ~\n  - shellcheck#v1.3.0",
        ),
      );
      expect(s.command).toBe("");
      expect(s.plugins).toEqual([
        { "docker-compose#v4.0.0": { run: "app", config: ["a.yml", "b.yml"] } },
        { "ecr#v2.7.0": null },
        { "shellcheck#v1.3.0": null },
      ]);
    });

    it("the map form becomes a list", () => {
      expect(script(step("command: x\nplugins:\n  docker#v5.0.0: {image: node}\n  ecr#v2: ~")).plugins).toEqual([
        { "docker#v5.0.0": { image: "node" } },
        { "ecr#v2": null },
      ]);
    });

    it("explains a badly indented plugin", () => {
      expect(errorAt(step("plugins:\n  - docker#v5.0.0:\n    image: node"), "configuration.steps[0].plugins[0]")).toBe(
        'must be a mapping with one key, the plugin name, but has "docker#v5.0.0" and "image"; indent the plugin\'s settings under its name',
      );
    });

    it("refuses other shapes", () => {
      expect(errorAt(step("plugins: docker"), "configuration.steps[0].plugins")).toMatch(/must be a list of plugins/);
      expect(errorAt(step("plugins: [3]"), "configuration.steps[0].plugins[0]")).toMatch(/must be a plugin name/);
      expect(errorAt(step("plugins: ['']"), "configuration.steps[0].plugins[0]")).toMatch(/must name a plugin/);
      expect(errorAt(step("plugins: [{}]"), "configuration.steps[0].plugins[0]")).toMatch(/empty mapping/);
    });

    it("an empty list is absent", () => {
      expect(script(step("plugins: []"))).not.toHaveProperty("plugins");
    });
  });

  describe("matrix", () => {
    it("a plain list is one anonymous dimension, values as text", () => {
      expect(script(step("command: x\nmatrix: [linux, 1.10, true, 3]")).matrix).toEqual({
        setup: { "": ["linux", "1.10", "true", "3"] },
      });
    });

    it("setup as a list", () => {
      expect(script(step("command: x\nmatrix:\n  setup: [a, b]")).matrix).toEqual({ setup: { "": ["a", "b"] } });
    });

    it("setup with named dimensions and adjustments", () => {
      const m = script(
        step(
          [
            "command: x",
            "matrix:",
            "  setup:",
            "    os: [linux, windows]",
            "    arch: [amd64, arm64]",
            "  adjustments:",
            "    - with: {os: windows, arch: arm64}",
            "      skip: true",
            "    - with: {os: plan9, arch: amd64}",
            "      soft_fail: true",
            "    - with: {os: linux, arch: amd64}",
            "      soft_fail: [{exit_status: 2}]",
          ].join("\n"),
        ),
      ).matrix;
      expect(m).toEqual({
        setup: { os: ["linux", "windows"], arch: ["amd64", "arm64"] },
        adjustments: [
          { with: { os: "windows", arch: "arm64" }, skip: true },
          { with: { os: "plan9", arch: "amd64" }, soft_fail: true },
          { with: { os: "linux", arch: "amd64" }, soft_fail: [2] },
        ],
      });
    });

    it("an adjustment of an anonymous dimension is a single value", () => {
      expect(
        script(step("command: x\nmatrix:\n  setup: [a, b]\n  adjustments:\n    - with: c\n      skip: Not yet")).matrix,
      ).toEqual({
        setup: { "": ["a", "b"] },
        adjustments: [{ with: { "": "c" }, skip: "Not yet" }],
      });
    });

    it("refuses an adjustment that does not match the dimensions", () => {
      expect(
        errorAt(
          step("command: x\nmatrix:\n  setup: {os: [a], arch: [b]}\n  adjustments:\n    - with: {os: a}"),
          "configuration.steps[0].matrix.adjustments[0].with",
        ),
      ).toBe("must give a value for each dimension of the setup (os and arch) and no others");
      expect(
        errorAt(
          step("command: x\nmatrix:\n  setup: [a]\n  adjustments:\n    - with: {os: a}"),
          "configuration.steps[0].matrix.adjustments[0].with",
        ),
      ).toBe("must be a single value, as the matrix setup is a plain list");
    });

    it("refuses matrix with parallelism", () => {
      expect(errorAt(step("command: x\nparallelism: 2\nmatrix: [a]"), "configuration.steps[0].matrix")).toBe(
        "cannot be combined with `parallelism` on the same step; use one or the other",
      );
    });

    it("refuses other shapes", () => {
      expect(errorAt(step("command: x\nmatrix: []"), "configuration.steps[0].matrix")).toBe(
        "must list at least one value",
      );
      expect(errorAt(step("command: x\nmatrix: linux"), "configuration.steps[0].matrix")).toMatch(
        /must be a list of values/,
      );
      expect(errorAt(step("command: x\nmatrix: {adjustments: []}"), "configuration.steps[0].matrix.setup")).toMatch(
        /^is required/,
      );
      expect(errorAt(step("command: x\nmatrix: [[a]]"), "configuration.steps[0].matrix[0]")).toMatch(
        /must be a string, integer or boolean/,
      );
      expect(
        errorAt(step("command: x\nmatrix: {setup: {'os-name': [a]}}"), "configuration.steps[0].matrix.setup.os-name"),
      ).toMatch(/not a valid dimension name/);
      expect(errorAt(step("command: x\nmatrix: {setup: {os: a}}"), "configuration.steps[0].matrix.setup.os")).toMatch(
        /must be a list of values/,
      );
      expect(
        errorAt(
          step("command: x\nmatrix: {setup: [a], adjustments: [{skip: true}]}"),
          "configuration.steps[0].matrix.adjustments[0].with",
        ),
      ).toMatch(/^is required/);
    });
  });

  it("refuses attributes a command step does not have, and Buildkite's that are not supported, naming them", () => {
    expect(errors(step("command: x\ncache: [node_modules]\nfoo: bar"))).toEqual([
      {
        field: "configuration.steps[0].cache",
        code: "is not supported by this server: it has no hosted agents' cache volumes",
      },
      {
        field: "configuration.steps[0].foo",
        code: expect.stringMatching(/^is not an attribute of a command step \(it has key, /),
      },
    ]);
  });

  it("reports every problem at once", () => {
    const found = errors(step("command: x\nparallelism: a\ntimeout: b\npriority: c"));
    expect(found.map((e) => e.field)).toEqual([
      "configuration.steps[0].timeout",
      "configuration.steps[0].parallelism",
      "configuration.steps[0].priority",
    ]);
  });
});

describe("wait step", () => {
  it("reads every attribute", () => {
    const all = steps(
      [
        "steps:",
        "  - {key: a, command: x}",
        "  - wait: ~",
        "    key: w",
        "    continue_on_failure: true",
        "    if: build.branch == 'main'",
        "    depends_on: a",
        "    allow_dependency_failure: true",
        "  - wait: ~",
        "    branches: main",
      ].join("\n"),
    );
    expect(all[1]).toEqual({
      type: "waiter",
      key: "w",
      continue_on_failure: true,
      if: "build.branch == 'main'",
      depends_on: [{ step: "a", allow_failure: false }],
      allow_dependency_failure: true,
    } satisfies WaiterStep);
    expect(all[2]).toEqual({ type: "waiter", branch_configuration: "main" });
  });

  it("refuses a non-boolean continue_on_failure", () => {
    expect(errorAt(step("wait: ~\ncontinue_on_failure: sometimes"), "configuration.steps[0].continue_on_failure")).toBe(
      'must be true or false, got "sometimes"',
    );
  });
});

describe("block step", () => {
  it("reads every attribute", () => {
    const s = first(
      [
        "steps:",
        "  - block: ':rocket: Release'",
        "    key: release",
        "    prompt: Fill in the details",
        "    submit: Go",
        "    blocked_state: running",
        "    allowed_teams: [deployers, admins]",
        "    branches: main",
        "    fields:",
        "      - text: Release name",
        "        key: release-name",
        "        hint: A code name",
        "        required: false",
        "        default: Dolphin",
        "        format: '[a-z]+'",
        "      - select: Stream",
        "        key: release/stream",
        "        multiple: true",
        "        default: [beta]",
        "        options:",
        "          - {label: Beta, value: beta}",
        "          - {label: Stable, value: 1.0}",
      ].join("\n"),
    );
    expect(s).toEqual({
      type: "manual",
      label: ":rocket: Release",
      key: "release",
      prompt: "Fill in the details",
      submit: "Go",
      blocked_state: "running",
      allowed_teams: ["deployers", "admins"],
      branch_configuration: "main",
      fields: [
        {
          text: "Release name",
          key: "release-name",
          hint: "A code name",
          required: false,
          default: "Dolphin",
          format: "[a-z]+",
        },
        {
          select: "Stream",
          key: "release/stream",
          multiple: true,
          default: ["beta"],
          options: [
            { label: "Beta", value: "beta" },
            { label: "Stable", value: "1.0" },
          ],
        },
      ],
    } satisfies ManualStep);
  });

  it("takes the label from label or name when block has none", () => {
    expect(first(step("block: ~\nlabel: Deploy"))).toEqual({ type: "manual", label: "Deploy" });
    expect(first(step("block: ''\nname: Deploy"))).toEqual({ type: "manual", label: "Deploy" });
    expect(first(step("type: block\nlabel: Deploy"))).toEqual({ type: "manual", label: "Deploy" });
  });

  it("allowed_teams may be a single team", () => {
    expect((first(step("block: b\nallowed_teams: ops")) as ManualStep).allowed_teams).toEqual(["ops"]);
  });

  it("refuses an unknown blocked_state", () => {
    expect(errorAt(step("block: b\nblocked_state: paused"), "configuration.steps[0].blocked_state")).toBe(
      'must be "passed", "failed" or "running", got "paused"',
    );
  });

  it("refuses a block label that is a list", () => {
    expect(errorAt(step("block: [a]\nkey: k"), "configuration.steps[0].block")).toBe(
      "must be the step's label (a string), got a list",
    );
  });

  describe("fields", () => {
    const fieldError = (fields: string, at: string) =>
      errorAt(step(`block: b\nfields:\n${fields.replace(/^/gm, "  ")}`), `configuration.steps[0].fields${at}`);

    it("requires a key", () => {
      expect(fieldError("- text: Name", "[0].key")).toBe(
        "is required: the meta-data key that stores the field's value",
      );
    });

    it("refuses keys with other characters", () => {
      expect(fieldError("- text: Name\n  key: release name", "[0].key")).toBe(
        'may only contain letters, digits, "-", "_" and "/", got "release name"',
      );
    });

    it("refuses duplicate keys", () => {
      expect(fieldError("- {text: A, key: k}\n- {text: B, key: k}", "[1].key")).toBe(
        '"k" is already the key of another field of this step',
      );
    });

    it("needs text or select, not both", () => {
      expect(fieldError("- key: k", "[0]")).toBe("needs `text:` or `select:`");
      expect(fieldError("- {key: k, text: a, select: b}", "[0]")).toBe(
        "has both `text` and `select`; a field is one or the other",
      );
    });

    it("a select needs options with label and value", () => {
      expect(fieldError("- {key: k, select: S}", "[0].options")).toMatch(/^is required/);
      expect(fieldError("- {key: k, select: S, options: []}", "[0].options")).toMatch(/^is required/);
      expect(fieldError("- {key: k, select: S, options: [{label: A}]}", "[0].options[0].value")).toBe("is required");
      expect(fieldError("- {key: k, select: S, options: [x]}", "[0].options[0]")).toMatch(/must be a mapping/);
    });

    it("refuses non-mapping fields", () => {
      expect(fieldError("- Name", "[0]")).toMatch(/must be a mapping/);
      expect(errorAt(step("block: b\nfields: {text: x}"), "configuration.steps[0].fields")).toMatch(/must be a list/);
    });

    it("checks flag types", () => {
      expect(fieldError("- {key: k, text: T, required: maybe}", "[0].required")).toBe(
        'must be true or false, got "maybe"',
      );
    });
  });
});

describe("input step", () => {
  it("is a manual step with is_input", () => {
    expect(first(step("input: Details\nkey: details\nprompt: Tell me\nfields:\n  - {text: Name, key: name}"))).toEqual({
      type: "manual",
      label: "Details",
      is_input: true,
      key: "details",
      prompt: "Tell me",
      fields: [{ text: "Name", key: "name" }],
    });
  });

  it("takes the label from label when input has none", () => {
    expect(first(step("input: ~\nlabel: Details"))).toEqual({ type: "manual", label: "Details", is_input: true });
  });

  it("the manual key is a block, not an input", () => {
    expect(first(step("manual: Go"))).toEqual({ type: "manual", label: "Go" });
  });
});

describe("trigger step", () => {
  it("reads every attribute", () => {
    const all = steps(
      [
        "steps:",
        "  - {key: tests, command: x}",
        "  - trigger: deploy-app",
        "    label: ':rocket: Deploy'",
        "    key: deploy",
        "    async: true",
        "    depends_on: tests",
        "    allow_dependency_failure: true",
        "    if: build.branch == 'main'",
        "    skip: Not today",
        "    soft_fail: true",
        "    parallelism: 2",
        "    build:",
        "      message: Deploy $BUILDKITE_COMMIT",
        "      commit: abc123",
        "      branch: main",
        "      env: {TARGET: prod, REPLICAS: 3}",
        "      meta_data: {release: 1.10, force: true}",
      ].join("\n"),
    );
    expect(all[1]).toEqual({
      type: "trigger",
      label: ":rocket: Deploy",
      pipeline: "deploy-app",
      key: "deploy",
      async: true,
      depends_on: [{ step: "tests", allow_failure: false }],
      allow_dependency_failure: true,
      if: "build.branch == 'main'",
      skip: "Not today",
      soft_fail: true,
      parallelism: 2,
      build: {
        message: "Deploy $BUILDKITE_COMMIT",
        commit: "abc123",
        branch: "main",
        env: { TARGET: "prod", REPLICAS: "3" },
        meta_data: { release: "1.10", force: "true" },
      },
    } satisfies TriggerStep);
  });

  it("async defaults to false; name is an alias of label; branches", () => {
    expect(first(step("trigger: other\nname: Other\nbranches: [main, dev]"))).toEqual({
      type: "trigger",
      label: "Other",
      pipeline: "other",
      async: false,
      branch_configuration: "main dev",
    });
  });

  it("keeps an empty build", () => {
    expect((first(step("trigger: other\nbuild: {}")) as TriggerStep).build).toEqual({});
  });

  it("refuses a missing or empty pipeline", () => {
    expect(errorAt(step("trigger: ~\nlabel: x"), "configuration.steps[0].trigger")).toBe(
      "is required: the slug of the pipeline to trigger",
    );
    expect(errorAt(step("trigger: ''"), "configuration.steps[0].trigger")).toBe("must not be empty");
  });

  it("refuses a non-string pipeline", () => {
    expect(errorAt(step("trigger: [a]\nlabel: x"), "configuration.steps[0].trigger")).toBe(
      "must be a string, got a list",
    );
  });

  it("refuses bad async and build", () => {
    expect(errorAt(step("trigger: t\nasync: yes"), "configuration.steps[0].async")).toBe(
      'must be true or false, got "yes"',
    );
    expect(errorAt(step("trigger: t\nbuild: main"), "configuration.steps[0].build")).toMatch(/must be a mapping/);
    expect(errorAt(step("trigger: t\nbuild: {env: {A: [1]}}"), "configuration.steps[0].build.env.A")).toMatch(
      /must be a string/,
    );
    expect(errorAt(step("trigger: t\nbuild: {meta_data: x}"), "configuration.steps[0].build.meta_data")).toMatch(
      /must be a mapping/,
    );
  });
});

describe("group step", () => {
  const yaml = [
    "steps:",
    "  - {key: setup, command: ./setup}",
    "  - group: ':test_tube: Tests'",
    "    key: tests",
    "    depends_on: setup",
    "    if: build.branch != 'wip'",
    "    allow_dependency_failure: true",
    "    skip: Later",
    "    steps:",
    "      - {command: unit, key: unit}",
    "      - command: integration",
    "        if: build.tag == null",
    "        skip: false",
    "        allow_dependency_failure: false",
    "      - wait",
    "      - command: e2e",
    "        depends_on: [unit]",
    "  - command: report",
    "    depends_on: tests",
  ].join("\n");

  it("flattens the group's steps into its place", () => {
    const all = steps(yaml);
    expect(all.map((s) => (s.type === "script" ? s.command : s.type))).toEqual([
      "./setup",
      "unit",
      "integration",
      "waiter",
      "e2e",
      "report",
    ]);
  });

  it("marks each step with the group's label and key", () => {
    const all = steps(yaml);
    for (const s of all.slice(1, 5)) expect(s.group).toEqual({ label: ":test_tube: Tests", key: "tests" });
    expect(all[0]).not.toHaveProperty("group");
    expect(all[5]).not.toHaveProperty("group");
  });

  it("adds the group's depends_on to each step's own", () => {
    const all = steps(yaml);
    expect(all[1]?.depends_on).toEqual([{ step: "setup", allow_failure: false }]);
    expect(all[4]?.depends_on).toEqual([
      { step: "setup", allow_failure: false },
      { step: "unit", allow_failure: false },
    ]);
  });

  it("ands the group's if with each step's", () => {
    const all = steps(yaml);
    expect(all[1]?.if).toBe("build.branch != 'wip'");
    expect(all[2]?.if).toBe("(build.branch != 'wip') && (build.tag == null)");
  });

  it("gives allow_dependency_failure and skip to steps that do not set them", () => {
    const all = steps(yaml);
    expect(all[1]?.allow_dependency_failure).toBe(true);
    expect(all[1]?.skip).toBe("Later");
    expect(all[2]?.allow_dependency_failure).toBe(false);
    expect(all[2]?.skip).toBe("Later"); // skip: false is "not set"
  });

  it("lets a step depend on a group's key", () => {
    expect(steps(yaml)[5]?.depends_on).toEqual([{ step: "tests", allow_failure: false }]);
  });

  it("takes the label from label/name when group is ~", () => {
    expect(steps("steps:\n  - group: ~\n    label: L\n    steps: [wait]\n")[0]?.group).toEqual({ label: "L" });
    expect(steps("steps:\n  - group: ~\n    steps: [wait]\n")[0]?.group).toEqual({ label: "" });
  });

  it("an explicit empty depends_on reaches steps without their own", () => {
    const all = steps(
      "steps:\n  - {key: a, command: x}\n  - group: g\n    depends_on: ~\n    steps:\n      - command: y\n      - {command: z, depends_on: a}\n",
    );
    expect(all[1]?.depends_on).toEqual([]);
    expect(all[2]?.depends_on).toEqual([{ step: "a", allow_failure: false }]);
  });

  it("does not duplicate a dependency the step already has", () => {
    const all = steps(
      "steps:\n  - {key: a, command: x}\n  - group: g\n    depends_on: a\n    steps:\n      - {command: y, depends_on: [{step: a, allow_failure: true}]}\n",
    );
    expect(all[1]?.depends_on).toEqual([{ step: "a", allow_failure: true }]);
  });

  it("refuses nested groups", () => {
    expect(
      errorAt(
        "steps:\n  - group: outer\n    steps:\n      - group: inner\n        steps: [wait]\n",
        "configuration.steps[0].steps[0]",
      ),
    ).toBe("is a group inside a group; groups cannot be nested, move its steps into the outer group");
  });

  it("refuses a group without steps", () => {
    expect(errorAt("steps:\n  - group: g\n", "configuration.steps[0].steps")).toBe(
      "is required: a group needs a non-empty list of steps",
    );
    expect(errorAt("steps:\n  - group: g\n    steps: []\n", "configuration.steps[0].steps")).toMatch(/non-empty/);
    expect(errorAt("steps:\n  - group: g\n    steps: wait\n", "configuration.steps[0].steps")).toBe(
      'must be a list of steps, got "wait"',
    );
  });

  it("refuses a step depending on its own group", () => {
    expect(
      errorAt(
        "steps:\n  - group: g\n    key: g\n    steps:\n      - {command: x, depends_on: g}\n",
        "configuration.steps[0].steps[0].depends_on",
      ),
    ).toBe('names "g", the key of the group this step is in; a step cannot depend on its own group');
  });

  it("detects a cycle through a group", () => {
    const found = errors(
      "steps:\n  - {key: a, command: x, depends_on: g}\n  - group: g\n    key: g\n    steps:\n      - {command: y, depends_on: a}\n",
    );
    expect(found[0]?.code).toMatch(/forms a dependency cycle/);
  });

  it("checks group keys like step keys", () => {
    expect(
      errorAt(
        "steps:\n  - {key: a, command: x}\n  - group: g\n    key: a\n    steps: [wait]\n",
        "configuration.steps[1].key",
      ),
    ).toMatch(/already the key of configuration.steps\[0\]/);
    expect(
      errorAt(
        "steps:\n  - group: g\n    key: 0190a6f2-3b4c-7d8e-9f00-112233445566\n    steps: [wait]\n",
        "configuration.steps[0].key",
      ),
    ).toMatch(/UUID/);
  });

  it("refuses branches on a step of a group with if", () => {
    expect(
      errorAt(
        "steps:\n  - group: g\n    if: build.tag != null\n    steps:\n      - {command: x, branches: main}\n",
        "configuration.steps[0].steps[0].branches",
      ),
    ).toMatch(/^cannot be used in a group that has `if`/);
  });

  it("refuses branches on the group itself (Buildkite's groups have none)", () => {
    expect(
      errorAt("steps:\n  - group: g\n    branches: main\n    steps: [wait]\n", "configuration.steps[0].branches"),
    ).toMatch(/^is not an attribute of a group step/);
  });

  it("uses the full path in errors", () => {
    expect(
      errorAt(
        "steps:\n  - wait\n  - group: g\n    steps:\n      - {command: x, parallelism: abc}\n",
        "configuration.steps[1].steps[0].parallelism",
      ),
    ).toBe('must be an integer from 1 to 500, got "abc"');
  });

  it("refuses a bad group label", () => {
    expect(errorAt("steps:\n  - group: [a]\n    steps: [wait]\n", "configuration.steps[0].group")).toMatch(
      /must be the group's label/,
    );
  });
});

describe("dependency checks", () => {
  it("are skipped while other errors exist, to avoid follow-on noise", () => {
    const found = errors("steps:\n  - {key: '', command: x}\n  - {command: y, depends_on: nope}\n");
    expect(found).toEqual([{ field: "configuration.steps[0].key", code: "must not be empty" }]);
  });

  it("accept a dependency on a wait or block step's key", () => {
    const all = steps("steps:\n  - {wait: ~, key: w}\n  - {block: b, key: b}\n  - {command: x, depends_on: [w, b]}\n");
    expect(all[2]?.depends_on).toHaveLength(2);
  });
});

describe("existing keys (pipeline uploads)", () => {
  const existingKeys = ["build", "tests"];

  it("lets new steps depend on steps already in the build", () => {
    const result = parsePipelineYaml("steps:\n  - {command: deploy, depends_on: [build, tests]}\n", { existingKeys });
    expect(result.ok && result.steps[0]?.depends_on).toEqual([
      { step: "build", allow_failure: false },
      { step: "tests", allow_failure: false },
    ]);
  });

  it("refuses a new step declaring a key the build already has", () => {
    const result = parsePipelineYaml("steps:\n  - {command: x, key: build}\n", { existingKeys });
    expect(result).toEqual({
      ok: false,
      errors: [
        {
          field: "configuration.steps[0].key",
          code: '"build" is already the key of a step already in this build; keys must be unique within the pipeline',
        },
      ],
    });
  });

  it("still refuses dependencies on keys nobody declared", () => {
    const result = parsePipelineYaml("steps:\n  - {command: x, depends_on: nope}\n", { existingKeys });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors[0]?.code).toMatch(/not the key of any step or group; keys in this pipeline/);
  });
});
