import fjs from "fast-json-stringify";
import { renderRestStep, restStepSchema } from "../render-steps.js";
import { parsePipelineYaml } from "./parse-yaml.js";
import type { PipelineStep } from "./step.js";

const serialize = fjs({ type: "array", items: restStepSchema } as Parameters<typeof fjs>[0]);

/** What a Fastify response with the schema would put on the wire. */
function wire(steps: PipelineStep[]): unknown {
  return JSON.parse(serialize(steps.map(renderRestStep)));
}

function parsed(yaml: string): PipelineStep[] {
  const result = parsePipelineYaml(yaml);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.steps;
}

describe("renderRestStep", () => {
  it("renders a minimal script step with nulls and empty collections", () => {
    expect(renderRestStep({ type: "script", name: "", command: "make", agent_query_rules: [] })).toEqual({
      type: "script",
      name: "",
      command: "make",
      artifact_paths: null,
      branch_configuration: null,
      env: {},
      timeout_in_minutes: null,
      agent_query_rules: [],
      concurrency: null,
      parallelism: null,
    });
  });

  it("renders a full script step", () => {
    expect(
      renderRestStep({
        type: "script",
        name: "Build",
        command: "make",
        artifact_paths: "dist/*",
        branch_configuration: "main",
        env: { A: "b" },
        timeout_in_minutes: 10,
        agent_query_rules: ["queue=default"],
        concurrency: 1,
        concurrency_group: "g",
        concurrency_method: "eager",
        parallelism: 2,
        priority: 3,
        key: "build",
        depends_on: [{ step: "setup", allow_failure: true }],
        allow_dependency_failure: true,
        skip: "later",
        retry: { automatic: [{ exit_status: "*", limit: 2 }], manual: { allowed: false } },
        soft_fail: [1],
        cancel_on_build_failing: true,
        plugins: [{ "docker#v5": { image: "node" } }],
        matrix: { setup: { "": ["a"] } },
        group: { label: "G", key: "g" },
      }),
    ).toEqual({
      type: "script",
      name: "Build",
      command: "make",
      artifact_paths: "dist/*",
      branch_configuration: "main",
      env: { A: "b" },
      timeout_in_minutes: 10,
      agent_query_rules: ["queue=default"],
      concurrency: 1,
      concurrency_group: "g",
      concurrency_method: "eager",
      parallelism: 2,
      priority: 3,
      key: "build",
      depends_on: [{ step: "setup", allow_failure: true }],
      allow_dependency_failure: true,
      skip: "later",
      retry: { automatic: [{ exit_status: "*", limit: 2 }], manual: { allowed: false } },
      soft_fail: [1],
      cancel_on_build_failing: true,
      plugins: [{ "docker#v5": { image: "node" } }],
      matrix: { setup: { "": ["a"] } },
      group: { label: "G", key: "g" },
    });
  });

  it("renders a waiter as just its type, plus what it sets", () => {
    expect(renderRestStep({ type: "waiter" })).toEqual({ type: "waiter" });
    expect(renderRestStep({ type: "waiter", key: "w", if: "x", continue_on_failure: true })).toEqual({
      type: "waiter",
      key: "w",
      if: "x",
      continue_on_failure: true,
    });
  });

  it("renders a manual step with its label", () => {
    expect(renderRestStep({ type: "manual", label: "Deploy?" })).toEqual({ type: "manual", label: "Deploy?" });
    expect(
      renderRestStep({
        type: "manual",
        label: "Info",
        is_input: true,
        prompt: "p",
        submit: "s",
        blocked_state: "failed",
        allowed_teams: ["ops"],
        fields: [{ text: "Name", key: "name" }],
        branch_configuration: "main",
      }),
    ).toEqual({
      type: "manual",
      label: "Info",
      is_input: true,
      prompt: "p",
      submit: "s",
      blocked_state: "failed",
      allowed_teams: ["ops"],
      fields: [{ text: "Name", key: "name" }],
      branch_configuration: "main",
    });
  });

  it("renders a trigger step with a full build object", () => {
    expect(renderRestStep({ type: "trigger", label: "", pipeline: "deploy", async: false })).toEqual({
      type: "trigger",
      label: "",
      pipeline: "deploy",
      build: { message: null, branch: null, commit: null, env: {} },
      async: false,
      branch_configuration: null,
      concurrency: null,
      parallelism: null,
    });
    expect(
      renderRestStep({
        type: "trigger",
        label: "Go",
        pipeline: "deploy",
        async: true,
        build: { message: "m", branch: "main", commit: "HEAD", env: { A: "1" }, meta_data: { k: "v" } },
        branch_configuration: "main",
        parallelism: 2,
        soft_fail: true,
        key: "t",
      }),
    ).toEqual({
      type: "trigger",
      label: "Go",
      pipeline: "deploy",
      build: { message: "m", branch: "main", commit: "HEAD", env: { A: "1" }, meta_data: { k: "v" } },
      async: true,
      branch_configuration: "main",
      concurrency: null,
      parallelism: 2,
      soft_fail: true,
      key: "t",
    });
  });

  it("does not share objects with the step", () => {
    const step: PipelineStep = { type: "script", name: "", command: "x", agent_query_rules: ["a=b"], env: { A: "1" } };
    const out = renderRestStep(step);
    (out.agent_query_rules as string[]).push("c=d");
    (out.env as Record<string, string>).B = "2";
    expect(step.agent_query_rules).toEqual(["a=b"]);
    expect(step.env).toEqual({ A: "1" });
  });
});

describe("restStepSchema with fast-json-stringify", () => {
  const yaml = [
    "steps:",
    "  - label: Build",
    "    key: build",
    "    command: [make, make test]",
    "    env: {A: 1.10}",
    "    agents: {queue: q}",
    "    artifact_paths: [a, b]",
    "    timeout_in_minutes: 5",
    "    concurrency: 1",
    "    concurrency_group: g",
    "    parallelism: 2",
    "    priority: 1",
    "    retry: {automatic: true, manual: {allowed: false, reason: no}}",
    "    soft_fail: [{exit_status: 1}]",
    "    skip: true",
    "    plugins: [{docker#v5: {image: node, n: 2}}, x#v1]",
    "    cancel_on_build_failing: true",
    "  - command: m",
    "    matrix: {setup: {os: [a, b]}, adjustments: [{with: {os: c}, skip: true}]}",
    "    depends_on: [{step: build, allow_failure: true}]",
    "    if: build.branch == 'main'",
    "  - wait: ~",
    "    continue_on_failure: true",
    "    branches: main",
    "  - wait",
    "  - block: Release",
    "    prompt: p",
    "    fields: [{select: S, key: s, options: [{label: A, value: a}], multiple: true, default: [a]}]",
    "    blocked_state: running",
    "    allowed_teams: [ops]",
    "  - input: Info",
    "  - trigger: deploy",
    "    label: Deploy",
    "    async: true",
    "    build: {message: m, branch: main, commit: HEAD, env: {A: b}, meta_data: {k: v}}",
    "    soft_fail: true",
    "  - trigger: other",
    "  - group: G",
    "    key: grp",
    "    steps:",
    "      - command: in-group",
  ].join("\n");

  it("serializes every variant fully: nothing dropped, nothing changed", () => {
    const steps = parsed(yaml);
    expect(steps).toHaveLength(9);
    expect(wire(steps)).toEqual(steps.map(renderRestStep));
  });

  it("serializes visual-form shapes and nulls", () => {
    const steps: PipelineStep[] = [
      { type: "script", name: "", command: "", agent_query_rules: [] },
      { type: "manual", label: "" },
      { type: "trigger", label: "", pipeline: "p", async: false, build: {} },
      { type: "waiter" },
    ];
    expect(wire(steps)).toEqual(steps.map(renderRestStep));
  });

  it("keeps JSON types go-buildkite decodes", () => {
    const [script, waiter, manual, trigger] = wire([
      { type: "script", name: "n", command: "c", agent_query_rules: [], timeout_in_minutes: 3 },
      { type: "waiter" },
      { type: "manual", label: "l" },
      { type: "trigger", label: "t", pipeline: "p", async: true },
    ]) as Array<Record<string, unknown>>;
    expect(typeof script?.timeout_in_minutes).toBe("number");
    expect(script?.env).toEqual({});
    expect(Array.isArray(script?.agent_query_rules)).toBe(true);
    expect(script?.artifact_paths).toBeNull();
    expect(waiter).toEqual({ type: "waiter" });
    expect(manual).toEqual({ type: "manual", label: "l" });
    expect(trigger?.async).toBe(true);
    expect(trigger?.build).toEqual({ message: null, branch: null, commit: null, env: {} });
  });
});
