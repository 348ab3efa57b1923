import { create, fromBinary, fromJson, toBinary, toJsonString } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import {
  type ManualStep,
  type PipelineStep,
  parsePipelineYaml,
  parseVisualSteps,
  renderRestStep,
  type ScriptStep,
  type StepCommon,
  type TriggerStep,
  type WaiterStep,
} from "@conveyor/ci-rules";
import { PipelineSchema, PipelineStepSchema } from "@conveyor/proto/pipelines";
import fc from "fast-check";
import { stepFromMessage, stepMessage, stepMessages, stepsFromMessages } from "./step-codec.js";

/** A step as the builds service and the gateway receive it: encoded, sent as bytes, decoded. */
function overTheWire(step: PipelineStep): PipelineStep {
  return stepFromMessage(fromBinary(PipelineStepSchema, toBinary(PipelineStepSchema, stepMessage(step))));
}

/** A step as it crossed the wire before steps were typed: a google.protobuf.Struct of its JSON. */
function overTheStructWire(step: PipelineStep): PipelineStep {
  const struct = fromJson(StructSchema, JSON.parse(JSON.stringify(step)));
  return JSON.parse(toJsonString(StructSchema, fromBinary(StructSchema, toBinary(StructSchema, struct))));
}

// Arbitrary steps of the model: every attribute present or absent, each with any value its type allows (integers
// within the range the parser admits for them: int32 where it bounds them, safe integers elsewhere).

const text = fc.string({ unit: "grapheme", maxLength: 6 });
/** Map keys: any text but "__proto__", which no JavaScript object holds as a plain key. */
const mapKey = text.filter((k) => k !== "__proto__");
const stringMap = fc.dictionary(mapKey, text, { maxKeys: 3, noNullPrototype: true });
const int32 = fc.integer();
const safeInt = fc.maxSafeInteger();
/** Free-form values as the model holds them, parsed from JSON (so objects are plain ones). */
const json = fc
  .jsonValue({ maxDepth: 2 })
  .map((v) => JSON.stringify(v))
  .filter((s) => !s.includes('"__proto__"'))
  .map((s) => JSON.parse(s));
const skip = fc.oneof(fc.boolean(), text);
const softFail = fc.oneof(fc.constant(true as const), fc.array(fc.oneof(fc.constant("*" as const), safeInt)));

const common: fc.Arbitrary<StepCommon> = fc.record(
  {
    key: text,
    depends_on: fc.array(fc.record({ step: text, allow_failure: fc.boolean() }, { noNullPrototype: true }), {
      maxLength: 3,
    }),
    allow_dependency_failure: fc.boolean(),
    if: text,
    branch_configuration: text,
    skip,
    group: fc.record({ label: text, key: text }, { requiredKeys: ["label"], noNullPrototype: true }),
  },
  { requiredKeys: [], noNullPrototype: true },
);

const retry = fc.record(
  {
    automatic: fc.array(
      fc.record(
        {
          exit_status: fc.oneof(fc.constant("*" as const), fc.array(safeInt, { maxLength: 3 })),
          limit: int32,
          signal: fc.oneof(text, fc.constant("*")),
          signal_reason: fc.oneof(text, fc.constant("*")),
        },
        { requiredKeys: ["exit_status", "limit"], noNullPrototype: true },
      ),
      { maxLength: 3 },
    ),
    manual: fc.record(
      { allowed: fc.boolean(), reason: text, permit_on_passed: fc.boolean() },
      { requiredKeys: ["allowed"], noNullPrototype: true },
    ),
  },
  { requiredKeys: [], noNullPrototype: true },
);

const matrix = fc.record(
  {
    setup: fc.dictionary(mapKey, fc.array(text, { maxLength: 3 }), { maxKeys: 3, noNullPrototype: true }),
    adjustments: fc.array(
      fc.record({ with: stringMap, skip, soft_fail: softFail }, { requiredKeys: ["with"], noNullPrototype: true }),
      {
        maxLength: 3,
      },
    ),
  },
  { requiredKeys: ["setup"], noNullPrototype: true },
);

const script: fc.Arbitrary<ScriptStep> = fc
  .tuple(
    common,
    fc.record(
      {
        type: fc.constant("script" as const),
        name: text,
        command: text,
        artifact_paths: text,
        env: stringMap,
        timeout_in_minutes: safeInt,
        agent_query_rules: fc.array(text, { maxLength: 3 }),
        concurrency: int32,
        concurrency_group: text,
        concurrency_method: fc.constantFrom("ordered" as const, "eager" as const),
        parallelism: int32,
        priority: safeInt,
        retry,
        soft_fail: softFail,
        cancel_on_build_failing: fc.boolean(),
        plugins: fc.array(
          fc.tuple(mapKey, json).map(([name, config]) => ({ [name]: config })),
          { maxLength: 3 },
        ),
        matrix,
      },
      { requiredKeys: ["type", "name", "command", "agent_query_rules"], noNullPrototype: true },
    ),
  )
  .map(([c, own]) => ({ ...c, ...own }));

const waiter: fc.Arbitrary<WaiterStep> = fc
  .tuple(
    common,
    fc.record(
      { type: fc.constant("waiter" as const), continue_on_failure: fc.boolean() },
      { requiredKeys: ["type"], noNullPrototype: true },
    ),
  )
  .map(([c, own]) => ({ ...c, ...own }));

const manual: fc.Arbitrary<ManualStep> = fc
  .tuple(
    common,
    fc.record(
      {
        type: fc.constant("manual" as const),
        label: text,
        is_input: fc.boolean(),
        prompt: text,
        blocked_state: fc.constantFrom("passed" as const, "failed" as const, "running" as const),
        fields: fc.array(fc.dictionary(mapKey, json, { maxKeys: 4, noNullPrototype: true }), { maxLength: 3 }),
        submit: text,
        allowed_teams: fc.array(text, { maxLength: 3 }),
      },
      { requiredKeys: ["type", "label"], noNullPrototype: true },
    ),
  )
  .map(([c, own]) => ({ ...c, ...own }));

const trigger: fc.Arbitrary<TriggerStep> = fc
  .tuple(
    common,
    fc.record(
      {
        type: fc.constant("trigger" as const),
        label: text,
        pipeline: text,
        build: fc.record(
          { message: text, branch: text, commit: text, env: stringMap, meta_data: stringMap },
          { requiredKeys: [], noNullPrototype: true },
        ),
        async: fc.boolean(),
        concurrency: int32,
        parallelism: int32,
        soft_fail: softFail,
      },
      { requiredKeys: ["type", "label", "pipeline", "async"], noNullPrototype: true },
    ),
  )
  .map(([c, own]) => ({ ...c, ...own }));

const step: fc.Arbitrary<PipelineStep> = fc.oneof(script, waiter, manual, trigger);

// One step of each kind with every attribute set (Required<> makes the type checker refuse a missing one), keys in
// the order the parser writes them.

const everyCommon: Required<Omit<StepCommon, "group">> = {
  key: "k",
  depends_on: [
    { step: "a", allow_failure: false },
    { step: "b", allow_failure: true },
  ],
  allow_dependency_failure: true,
  if: 'build.branch == "main"',
  branch_configuration: "main release/*",
  skip: "not today",
};
const everyGroup: Required<NonNullable<StepCommon["group"]>> = { label: ":package: Group", key: "g" };

/** Every attribute a command step carries on the wire (its notify: is read from the pipeline's YAML, not carried). */
const everyScript: Required<Omit<ScriptStep, "notify">> = {
  type: "script",
  name: ":hammer: Test",
  command: "make\nmake test",
  agent_query_rules: ["queue=linux", "os=*"],
  ...everyCommon,
  artifact_paths: "out/**;logs/*",
  env: { A: "1", "": "empty name", B: "" },
  timeout_in_minutes: Number.MAX_SAFE_INTEGER,
  concurrency: 3,
  concurrency_group: "deploy/production",
  concurrency_method: "eager",
  parallelism: 5,
  priority: -Number.MAX_SAFE_INTEGER,
  retry: {
    automatic: [
      { exit_status: "*", signal: "*", signal_reason: "*", limit: 2 },
      { exit_status: [-1, 255, 2 ** 40], limit: 3, signal: "SIGKILL", signal_reason: "agent_stop" },
      { exit_status: "*", limit: 1 },
    ],
    manual: { allowed: false, reason: "deploys are not retried", permit_on_passed: true },
  },
  soft_fail: [1, "*", 2 ** 40],
  cancel_on_build_failing: true,
  plugins: [
    { "docker#v5.12.0": { image: "node:20", environment: ["A", "B"], "propagate-uid-gid": true, shm: 1.5 } },
    { "artifacts#v1.9.0": null },
    { "custom#main": "a string configuration" },
  ],
  matrix: {
    setup: { os: ["linux", "windows"], arch: ["amd64", "arm64"], "": [] },
    adjustments: [
      { with: { os: "windows", arch: "arm64", "": "x" }, skip: true, soft_fail: true },
      { with: { os: "linux", arch: "amd64", "": "" }, skip: "flaky", soft_fail: [1, "*"] },
      { with: { os: "linux", arch: "arm64", "": "y" } },
    ],
  },
  signed: {
    signature: {
      algorithm: "EdDSA",
      signed_fields: ["command", "env", "matrix", "plugins", "repository_url"],
      value: "a..b",
    },
    step: {
      command: "make",
      env: { A: "1" },
      matrix: ["x"],
      signature: {
        algorithm: "EdDSA",
        signed_fields: ["command", "env", "matrix", "plugins", "repository_url"],
        value: "a..b",
      },
    },
  },
  group: everyGroup,
};
const everyWaiter: Required<WaiterStep> = {
  type: "waiter",
  ...everyCommon,
  skip: false,
  continue_on_failure: false,
  group: { label: "" },
};
const everyManual: Required<ManualStep> = {
  type: "manual",
  label: ":rocket: Release?",
  ...everyCommon,
  skip: true,
  is_input: true,
  prompt: "Fill these in",
  submit: "Go",
  blocked_state: "running",
  allowed_teams: ["release-managers", "0f0e2c1c-32c6-4c1b-8e66-1f3b2c4d5e6f"],
  fields: [
    { key: "name", text: "Release name", required: true, hint: "vX.Y", default: "v1" },
    { key: "env", select: "Where", multiple: true, options: [{ label: "Prod", value: "prod" }], default: ["prod"] },
  ],
  group: everyGroup,
};
const everyTrigger: Required<TriggerStep> = {
  type: "trigger",
  label: "Deploy",
  pipeline: "deploy",
  async: true,
  ...everyCommon,
  build: {
    message: "Deploy the release",
    commit: "HEAD",
    branch: "main",
    env: { TARGET: "prod" },
    meta_data: { release: "v1", empty: "" },
  },
  concurrency: 1,
  parallelism: 2,
  soft_fail: true,
  group: everyGroup,
};

describe("the pipeline step codec", () => {
  it.each([
    ["command", everyScript],
    ["wait", everyWaiter],
    ["block", everyManual],
    ["trigger", everyTrigger],
  ] as const)("carries every attribute of a %s step, keys in the parser's order", (_, original) => {
    const decoded = overTheWire(original);
    expect(decoded).toStrictEqual(original);
    expect(JSON.stringify(decoded)).toBe(JSON.stringify(original));
  });

  it("keeps absent attributes absent and empty lists and maps empty", () => {
    const bare: PipelineStep[] = [
      { type: "script", name: "", command: "", agent_query_rules: [] },
      { type: "waiter" },
      { type: "manual", label: "" },
      { type: "trigger", label: "", pipeline: "", async: false },
      {
        type: "script",
        name: "",
        command: "",
        agent_query_rules: [],
        depends_on: [],
        env: {},
        retry: { automatic: [] },
        soft_fail: [],
        plugins: [],
        matrix: { setup: {}, adjustments: [] },
      },
      { type: "manual", label: "", fields: [], allowed_teams: [] },
      { type: "trigger", label: "", pipeline: "", async: false, build: { env: {}, meta_data: {} } },
      { type: "trigger", label: "", pipeline: "", async: false, build: {} },
    ];
    for (const original of bare) expect(overTheWire(original)).toStrictEqual(original);
  });

  it("round-trips any step of the model", () => {
    fc.assert(
      fc.property(step, (original) => {
        expect(overTheWire(original)).toStrictEqual(original);
      }),
      { numRuns: 500 },
    );
  });

  it("carries a pipeline's steps in their order inside the Pipeline message", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 5 }), (steps) => {
        const pipeline = create(PipelineSchema, { id: "p", steps: stepMessages(steps) });
        const received = fromBinary(PipelineSchema, toBinary(PipelineSchema, pipeline));
        expect(stepsFromMessages(received.steps)).toStrictEqual(steps);
      }),
      { numRuns: 100 },
    );
  });

  const yamls = {
    "every kind, with retry, plugins, matrix and soft_fail": `
agents: { queue: default }
steps:
  - label: ":hammer: Test"
    key: test
    command: [make, make test]
    artifact_paths: [out/**, logs/*]
    env: { A: 1, B: "two" }
    timeout_in_minutes: 10
    concurrency: 2
    concurrency_group: deploy/test
    concurrency_method: eager
    priority: 3
    retry:
      automatic:
        - exit_status: -1
          limit: 2
        - exit_status: [1, 2]
          signal_reason: cancel
          signal: SIGTERM
          limit: 1
      manual: { allowed: false, reason: no, permit_on_passed: true }
    soft_fail: [{ exit_status: 1 }, { exit_status: "*" }]
    cancel_on_build_failing: true
    plugins:
      - docker#v5.12.0: { image: node, environment: [A, B], propagate-uid-gid: true }
      - artifacts#v1.9.0
    matrix:
      setup: { os: [linux, windows], arch: [amd64] }
      adjustments:
        - with: { os: windows, arch: amd64 }
          soft_fail: true
          skip: "not yet"
  - command: make retry
    retry: { automatic: true, manual: false }
  - wait: ~
    continue_on_failure: true
    if: build.branch == "main"
  - block: ":rocket: Release?"
    prompt: Sure?
    blocked_state: running
    allowed_teams: [releasers]
    fields:
      - text: Name
        key: name
        required: false
      - select: Where
        key: where
        options: [{ label: Prod, value: prod }]
  - input: Details
    fields: []
  - trigger: deploy
    label: Deploy
    async: true
    build: { message: hi, commit: HEAD, branch: main, env: { X: y }, meta_data: { a: b } }
    soft_fail: true
`,
    "groups, dependencies and skips": `
steps:
  - group: ":package: Build"
    key: build
    depends_on: [setup]
    if: build.branch != "x"
    allow_dependency_failure: true
    skip: grouped
    steps:
      - command: a
        key: a
      - command: b
        depends_on: [{ step: a, allow_failure: true }]
        if: build.tag == null
        skip: false
      - wait
  - command: setup
    key: setup
    depends_on: []
    branches: "main release/*"
    skip: true
  - block: Go
    depends_on: build
`,
  };

  it.each(Object.entries(yamls))(
    "answers the REST steps of a parsed pipeline byte for byte as the Struct wire did (%s)",
    (_, yaml) => {
      const parsed = parsePipelineYaml(yaml);
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
      for (const original of parsed.steps) {
        const before = JSON.stringify(renderRestStep(overTheStructWire(original)));
        expect(JSON.stringify(renderRestStep(overTheWire(original)))).toBe(before);
      }
    },
  );

  it("answers the REST steps of visual steps byte for byte as the Struct wire did", () => {
    const parsed = parseVisualSteps([
      { type: "script", name: "Test", command: "make", env: { A: "1" }, agent_query_rules: ["queue=x"], key: "t" },
      { type: "waiter" },
      { type: "manual", label: "Go", depends_on: ["t"] },
      { type: "trigger", label: "D", trigger_project_slug: "deploy", trigger_commit: "HEAD", trigger_async: true },
    ]);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    for (const original of parsed.steps) {
      const before = JSON.stringify(renderRestStep(overTheStructWire(original)));
      expect(JSON.stringify(renderRestStep(overTheWire(original)))).toBe(before);
    }
  });

  it("refuses a step message that names no kind of step", () => {
    expect(() => stepFromMessage(create(PipelineStepSchema, { key: "k" }))).toThrow(/names no kind of step/);
  });

  it("refuses a plugins entry that holds more or less than one plugin", () => {
    const two = { ...everyScript, plugins: [{ a: null, b: null }] };
    const none = { ...everyScript, plugins: [{}] };
    expect(() => stepMessage(two)).toThrow(/holds one plugin/);
    expect(() => stepMessage(none)).toThrow(/holds one plugin/);
  });

  it("refuses a step of a type the model does not have", () => {
    const stored: PipelineStep = JSON.parse('{"type":"group"}');
    expect(() => stepMessage(stored)).toThrow(/"group" has no wire form/);
  });
});
