import { parse } from "yaml";
import { parsePipelineYaml } from "./parse-yaml.js";
import type { ManualStep, PipelineStep, ScriptStep, StepCommon, StepMatrix, TriggerStep, WaiterStep } from "./step.js";
import { stepsToYaml } from "./to-yaml.js";
import { parseVisualSteps } from "./visual-steps.js";

function roundTrip(steps: PipelineStep[], env?: Record<string, string>) {
  const yaml = stepsToYaml(steps, env);
  const result = parsePipelineYaml(yaml);
  if (!result.ok) throw new Error(`re-parse failed: ${JSON.stringify(result.errors)}\n${yaml}`);
  return { yaml, result };
}

function expectRoundTrip(steps: PipelineStep[], env?: Record<string, string>): string {
  const { yaml, result } = roundTrip(steps, env);
  expect(result.steps).toEqual(steps);
  expect(result.env).toEqual(env ?? {});
  // Canonical: writing what was read back gives the same text.
  expect(stepsToYaml(result.steps, result.env)).toBe(yaml);
  return yaml;
}

function parsedSteps(yaml: string) {
  const result = parsePipelineYaml(yaml);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result;
}

describe("stepsToYaml output", () => {
  it("writes a top-level steps list, and env when there is one", () => {
    expect(stepsToYaml([{ type: "waiter" }])).toBe("steps:\n  - wait\n");
    expect(stepsToYaml([{ type: "waiter" }], {})).toBe("steps:\n  - wait\n");
    expect(stepsToYaml([{ type: "waiter" }], { A: "1" })).toBe('env:\n  A: "1"\nsteps:\n  - wait\n');
  });

  it("writes a simple command step", () => {
    expect(
      stepsToYaml([{ type: "script", name: "Build", command: "make", agent_query_rules: ["queue=default"] }]),
    ).toBe("steps:\n  - label: Build\n    command: make\n    agents:\n      queue: default\n");
  });

  it("writes a multi-line command as a literal block", () => {
    const yaml = stepsToYaml([{ type: "script", name: "", command: "echo a\necho b", agent_query_rules: [] }]);
    expect(yaml).toBe("steps:\n  - command: |-\n      echo a\n      echo b\n");
  });

  it("writes agents as a list when they do not form a mapping", () => {
    const yaml = stepsToYaml([{ type: "script", name: "", command: "x", agent_query_rules: ["os=linux", "os=mac"] }]);
    expect(parse(yaml).steps[0].agents).toEqual(["os=linux", "os=mac"]);
  });

  it("writes a waiter with attributes as a mapping", () => {
    expect(stepsToYaml([{ type: "waiter", continue_on_failure: true }])).toBe(
      "steps:\n  - wait: null\n    continue_on_failure: true\n",
    );
  });

  it("writes block and input steps", () => {
    expect(parse(stepsToYaml([{ type: "manual", label: "Go?" }])).steps).toEqual([{ block: "Go?" }]);
    expect(parse(stepsToYaml([{ type: "manual", label: "Info", is_input: true }])).steps).toEqual([{ input: "Info" }]);
  });

  it("writes a trigger step; async only when true", () => {
    expect(parse(stepsToYaml([{ type: "trigger", label: "", pipeline: "p", async: false }])).steps).toEqual([
      { trigger: "p" },
    ]);
    expect(parse(stepsToYaml([{ type: "trigger", label: "Deploy", pipeline: "p", async: true }])).steps).toEqual([
      { trigger: "p", label: "Deploy", async: true },
    ]);
  });

  it("wraps consecutive steps of a group in a group step", () => {
    const doc = parse(
      stepsToYaml([
        { type: "waiter" },
        { type: "waiter", group: { label: "G", key: "g" } },
        { type: "manual", label: "b", group: { label: "G", key: "g" } },
        { type: "waiter", group: { label: "H" } },
        { type: "waiter" },
      ]),
    );
    expect(doc.steps).toEqual([
      "wait",
      { group: "G", key: "g", steps: ["wait", { block: "b" }] },
      { group: "H", steps: ["wait"] },
      "wait",
    ]);
  });

  it("writes depends_on as keys, with objects only for allow_failure", () => {
    const doc = parse(
      stepsToYaml([
        { type: "waiter", key: "a" },
        { type: "waiter", key: "b" },
        {
          type: "waiter",
          depends_on: [
            { step: "a", allow_failure: false },
            { step: "b", allow_failure: true },
          ],
        },
      ]),
    );
    expect(doc.steps[2].depends_on).toEqual(["a", { step: "b", allow_failure: true }]);
  });

  it("quotes strings that would otherwise read as other types", () => {
    const yaml = stepsToYaml([
      {
        type: "script",
        name: "true",
        command: "1.10",
        env: { A: "null", B: "~", C: "0x1F", D: "", E: "- x", F: "a: b", G: "#c" },
        agent_query_rules: ["v=1.0"],
      },
    ]);
    const step = parse(yaml).steps[0];
    expect(step.label).toBe("true");
    expect(step.command).toBe("1.10");
    expect(step.env).toEqual({ A: "null", B: "~", C: "0x1F", D: "", E: "- x", F: "a: b", G: "#c" });
    expect(step.agents).toEqual({ v: "1.0" });
  });

  it("does not emit YAML anchors for shared objects", () => {
    const shared = [{ step: "a", allow_failure: false }];
    const yaml = stepsToYaml([
      { type: "waiter", key: "a" },
      { type: "waiter", depends_on: shared },
      { type: "waiter", depends_on: shared },
    ]);
    expect(yaml).not.toMatch(/[&*]a\d/);
  });
});

describe("round trip: parsePipelineYaml(stepsToYaml(x)) gives back x", () => {
  const documents: Array<[string, string]> = [
    ["a command step", "steps:\n  - command: make\n"],
    ["labels, keys and commands lists", "steps:\n  - label: Build\n    key: build\n    commands: [make, make test]\n"],
    [
      "every command attribute",
      [
        "env: {GLOBAL: 1.10}",
        "agents: {queue: default}",
        "steps:",
        "  - label: ':hammer: Build'",
        "    key: build",
        "    command: make",
        "    artifact_paths: [dist/*, logs/*]",
        "    env: {A: b, N: 2, T: true}",
        "    timeout_in_minutes: 30",
        "    agents: {queue: builders, os: linux}",
        "    concurrency: 1",
        "    concurrency_group: deploy/prod",
        "    concurrency_method: eager",
        "    priority: -1",
        "    retry:",
        "      automatic: [{exit_status: -1, limit: 3}, {exit_status: '*', signal: SIGKILL, limit: 1}, {exit_status: [1, 2]}]",
        "      manual: {allowed: false, reason: Nope, permit_on_passed: true}",
        "    soft_fail: [{exit_status: 1}, {exit_status: '*'}]",
        "    cancel_on_build_failing: true",
        "    skip: Flaky",
        "    if: build.branch == 'main'",
        "    allow_dependency_failure: false",
        "    plugins:",
        "      - docker#v5.12.0: {image: 'node:20', environment: [A, B], propagate-uid-gid: true, shm-size: 2}",
        "      - artifacts#v1.9.0",
        "  - command: [a, b]",
        "    parallelism: 4",
        "    depends_on: [{step: build, allow_failure: true}]",
        "    branches: main release/*",
        "    retry: {automatic: true}",
        "    soft_fail: true",
        "    skip: true",
        "  - command: x",
        "    retry: {automatic: false, manual: true}",
        "    depends_on: ~",
      ].join("\n"),
    ],
    [
      "a matrix",
      [
        "steps:",
        "  - command: 'build {{matrix}}'",
        "    matrix: [linux, 1.10, true]",
        "  - command: 'test {{matrix.os}} {{matrix.arch}}'",
        "    matrix:",
        "      setup: {os: [linux, windows], arch: [amd64, arm64]}",
        "      adjustments:",
        "        - with: {os: windows, arch: arm64}",
        "          skip: true",
        "        - with: {os: plan9, arch: amd64}",
        "          soft_fail: [{exit_status: 3}]",
        "  - command: x",
        "    matrix:",
        "      setup: [a, b]",
        "      adjustments: [{with: c, skip: Later}]",
      ].join("\n"),
    ],
    ["plugin-only steps", "steps:\n  - plugins: [docker#v5.0.0]\n  - plugins: {ecr#v2: {login: true}}\n"],
    [
      "wait steps",
      "steps:\n  - {key: a, command: x}\n  - wait\n  - wait: ~\n    continue_on_failure: true\n    key: w\n    if: build.tag != null\n    depends_on: a\n    allow_dependency_failure: true\n  - wait: ~\n    branches: main\n",
    ],
    [
      "block and input steps",
      [
        "steps:",
        "  - block",
        "  - input",
        "  - block: ':rocket: Release'",
        "    key: release",
        "    prompt: Details?",
        "    submit: Go",
        "    blocked_state: failed",
        "    allowed_teams: [ops]",
        "    branches: main",
        "    fields:",
        "      - {text: Name, key: name, hint: h, required: false, default: d, format: '[a-z]+'}",
        "      - select: Stream",
        "        key: stream",
        "        multiple: true",
        "        default: [beta]",
        "        options: [{label: Beta, value: beta}, {label: Stable, value: 1.0, hint: x}]",
        "  - input: Info",
        "    fields: [{text: Why, key: why}]",
        "    if: build.source == 'ui'",
      ].join("\n"),
    ],
    [
      "trigger steps",
      [
        "steps:",
        "  - trigger: deploy",
        "  - trigger: deploy",
        "    label: Deploy",
        "    key: d",
        "    async: true",
        "    skip: No",
        "    soft_fail: [{exit_status: '*'}]",
        "    parallelism: 2",
        "    branches: main",
        "    build:",
        "      message: m",
        "      commit: HEAD",
        "      branch: main",
        "      env: {A: 1}",
        "      meta_data: {k: v}",
        "  - trigger: other",
        "    build: {}",
      ].join("\n"),
    ],
    [
      "groups",
      [
        "steps:",
        "  - {key: setup, command: ./setup}",
        "  - group: Tests",
        "    key: tests",
        "    depends_on: setup",
        "    if: build.branch != 'wip'",
        "    allow_dependency_failure: true",
        "    skip: Later",
        "    steps:",
        "      - {command: unit, key: unit}",
        "      - {command: integration, if: build.tag == null}",
        "      - wait",
        "      - {command: e2e, depends_on: unit}",
        "  - group: ~",
        "    steps: [block]",
        "  - group: Tests",
        "    steps: [wait]",
        "  - command: report",
        "    depends_on: tests",
      ].join("\n"),
    ],
    [
      "tricky strings",
      [
        "steps:",
        "  - label: 'true'",
        "    command: \"echo 'a: b' # not a comment\\n  indented\\ttab\\n\"",
        "    env: {A: 'null', B: '~', C: '', D: ' spaced ', E: \"line1\\nline2\", F: 'ünïcödé ✓', G: '\"quoted\"'}",
        "    key: '1.10'",
        "  - command: ':'",
        "    label: '*'",
        '    if: "build.message =~ /^\\\\[skip\\\\]/"',
      ].join("\n"),
    ],
    ["a bare list", "- command: a\n- wait\n- trigger: t\n"],
  ];

  it.each(documents)("%s", (_, yaml) => {
    const { steps, env } = parsedSteps(yaml);
    expectRoundTrip(steps, env);
  });

  it("visual steps", () => {
    const result = parseVisualSteps([
      {
        type: "script",
        name: "Build",
        command: "make",
        artifact_paths: "dist/*",
        branch_configuration: "main",
        env: { A: "1" },
        timeout_in_minutes: 10,
        agent_query_rules: ["queue=default"],
        concurrency: 2,
        concurrency_group: "g",
        parallelism: 3,
      },
      { type: "waiter" },
      { type: "manual", label: "Deploy?" },
      { type: "manual" },
      {
        type: "trigger",
        label: "Go",
        trigger_project_slug: "deploy",
        trigger_commit: "HEAD",
        trigger_branch: "main",
        trigger_async: true,
      },
      { type: "trigger", trigger_project_slug: "other" },
    ]);
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expectRoundTrip(result.steps, { PIPELINE: "env" });
  });
});

describe("round trip on generated steps", () => {
  // A small deterministic PRNG (mulberry32) so failures are reproducible.
  function rng(seed: number) {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  const STRINGS = [
    "plain",
    "",
    " leading",
    "trailing ",
    "true",
    "false",
    "null",
    "~",
    "1.10",
    "007",
    "0x1F",
    "1e3",
    ".inf",
    "yes",
    "- dash",
    "a: b",
    "# hash",
    "{braces}",
    "[brackets]",
    "*star",
    "&amp",
    "!bang",
    "%percent",
    "@at",
    "`tick`",
    "'single'",
    '"double"',
    "multi\nline",
    "multi\nline\n",
    "trailing newlines\n\n",
    "tab\there",
    "ünïcödé ✓ 🚀",
    ":emoji: label",
    "back\\slash",
    "very long ".repeat(20),
  ];

  function generate(seed: number): { steps: PipelineStep[]; env: Record<string, string> } {
    const random = rng(seed);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
    const chance = (p: number) => random() < p;
    const int = (min: number, max: number) => min + Math.floor(random() * (max - min + 1));
    const str = () => pick(STRINGS);
    const strMap = () => {
      const out: Record<string, string> = {};
      for (let i = int(0, 3); i > 0; i--) out[pick(["A", "B_2", "lower", "TRUE", "1.10", "x-y"])] = str();
      return out;
    };
    const softFail = (): true | Array<number | "*"> =>
      chance(0.5) ? true : Array.from({ length: int(0, 3) }, () => (chance(0.3) ? "*" : int(-1, 255)));

    const keys: string[] = [];
    const steps: PipelineStep[] = [];
    let currentGroup: PipelineStep["group"];
    let groupCount = 0;
    const count = int(1, 12);
    for (let i = 0; i < count; i++) {
      const groupRoll = random();
      if (groupRoll < 0.2) {
        groupCount++;
        currentGroup = chance(0.5) ? { label: chance(0.2) ? "" : str() } : { label: str(), key: `group-${groupCount}` };
        if (currentGroup.key) keys.push(currentGroup.key);
      } else if (groupRoll < 0.4) {
        currentGroup = undefined;
      }
      const common: StepCommon = {};
      if (chance(0.4)) {
        common.key = `step-${i}`;
      }
      const earlier = keys.filter((k) => k !== currentGroup?.key);
      if (chance(0.3)) {
        common.depends_on =
          earlier.length === 0 || chance(0.2) ? [] : [{ step: pick(earlier), allow_failure: chance(0.5) }];
      }
      if (common.key) keys.push(common.key);
      if (chance(0.2)) common.allow_dependency_failure = chance(0.5);
      const conditionRoll = random();
      if (conditionRoll < 0.3)
        common.if = pick(["build.branch == 'main'", "build.tag != null && build.message !~ /skip/"]);
      else if (conditionRoll < 0.6) common.branch_configuration = pick(["main", "release/* !release/old", "*", "!wip"]);
      if (chance(0.2)) common.skip = chance(0.5) ? true : "Reason: later";
      if (currentGroup) common.group = { ...currentGroup };

      const kind = pick(["script", "script", "waiter", "manual", "trigger"] as const);
      if (kind === "script") {
        const s: ScriptStep = {
          type: "script",
          name: str(),
          command: chance(0.2) ? "" : str(),
          agent_query_rules: chance(0.5) ? [] : chance(0.5) ? ["queue=q", "os=linux"] : ["os=a", "os=b"],
          ...common,
        };
        if (s.command === "" && chance(0.5))
          s.plugins = [{ "docker#v5.0.0": { image: str(), n: 3, flag: true } }, { "x#v1": null }];
        if (chance(0.3)) s.artifact_paths = "dist/*;logs/**/*.txt";
        if (chance(0.3)) s.env = strMap();
        if (chance(0.3)) s.timeout_in_minutes = int(1, 600);
        if (chance(0.2)) {
          s.concurrency = int(1, 5);
          s.concurrency_group = `group/${str() || "x"}`;
          if (chance(0.5)) s.concurrency_method = pick(["ordered", "eager"] as const);
        }
        if (chance(0.2)) s.priority = int(-10, 10);
        if (chance(0.3)) {
          s.retry = {};
          if (chance(0.7)) {
            s.retry.automatic = Array.from({ length: int(0, 2) }, () => ({
              exit_status: chance(0.5) ? ("*" as const) : [int(-1, 255)],
              limit: int(1, 10),
              ...(chance(0.3) ? { signal: "SIGKILL" } : {}),
              ...(chance(0.3) ? { signal_reason: "agent_stop" } : {}),
            }));
          }
          if (chance(0.5)) s.retry.manual = { allowed: chance(0.5), ...(chance(0.5) ? { reason: str() } : {}) };
          if (Object.keys(s.retry).length === 0) delete s.retry;
        }
        if (chance(0.2)) s.soft_fail = softFail();
        if (chance(0.1)) s.cancel_on_build_failing = chance(0.5);
        if (chance(0.2)) {
          s.parallelism = int(1, 20);
        } else if (chance(0.15)) {
          const matrix: StepMatrix = chance(0.5)
            ? { setup: { "": ["a", str() || "b"] } }
            : { setup: { os: ["linux", "mac"], arch: ["1.10", "true"] } };
          if (chance(0.5)) {
            const anonymous = Object.keys(matrix.setup)[0] === "";
            matrix.adjustments = [
              {
                with: anonymous ? { "": "c" } : { os: "win", arch: "arm" },
                ...(chance(0.5) ? { skip: true } : { soft_fail: softFail() }),
              },
            ];
          }
          s.matrix = matrix;
        }
        steps.push(s);
      } else if (kind === "waiter") {
        const w: WaiterStep = { type: "waiter", ...common };
        if (chance(0.3)) w.continue_on_failure = chance(0.5);
        steps.push(w);
      } else if (kind === "manual") {
        const m: ManualStep = { type: "manual", label: str(), ...common };
        if (chance(0.3)) m.is_input = true;
        if (chance(0.3)) m.prompt = str();
        if (chance(0.2)) m.submit = str();
        if (chance(0.2)) m.blocked_state = pick(["passed", "failed", "running"] as const);
        if (chance(0.2)) m.allowed_teams = ["ops", str() || "dev"];
        if (chance(0.3)) {
          m.fields = [
            { text: str(), key: "name", required: chance(0.5) },
            { select: str(), key: "stream", options: [{ label: str(), value: "1.0" }], default: "1.0" },
          ];
        }
        steps.push(m);
      } else {
        const t: TriggerStep = {
          type: "trigger",
          label: str(),
          pipeline: `pipeline-${i}`,
          async: chance(0.5),
          ...common,
        };
        if (chance(0.5)) {
          t.build = {};
          if (chance(0.5)) t.build.message = str();
          if (chance(0.5)) t.build.commit = "HEAD";
          if (chance(0.5)) t.build.branch = str();
          if (chance(0.3)) t.build.env = strMap();
          if (chance(0.3)) t.build.meta_data = strMap();
        }
        if (chance(0.2)) t.parallelism = int(1, 4);
        if (chance(0.2)) t.soft_fail = softFail();
        steps.push(t);
      }
    }
    return { steps, env: chance(0.5) ? strMap() : {} };
  }

  it("holds for 400 generated pipelines", () => {
    for (let seed = 1; seed <= 400; seed++) {
      const { steps, env } = generate(seed);
      try {
        expectRoundTrip(steps, env);
      } catch (error) {
        throw new Error(`seed ${seed}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  });
});
