import {
  type AttributeKind,
  type ManualStep,
  mayUnblock,
  type PipelineStep,
  parsePipelineYaml,
  STEP_ATTRIBUTES,
  type StepError,
} from "@conveyor/ci-rules";
import { cancelOnFailingPlan } from "./domain/cancel-on-failing.js";
// Nothing accepted and ignored (docs/compatibility.md#pipeline-yaml): every attribute the parser accepts, per kind of
// step, with where it takes effect and a check that it does. A row per attribute of STEP_ATTRIBUTES: an attribute
// added to the parser without a row here fails the last test. Attributes outside the list are refused (422).

import { type Job, storedJob } from "./domain/job.js";
import { jobEnvironment } from "./domain/job-env.js";
import { type PlannedJob, planJobs } from "./domain/jobs-from-steps.js";
import { automaticRetryRule, manualRetryProblem } from "./domain/retries.js";
import { groupJob } from "./jobs/concurrency-gate.js";
import { blockFormMessage } from "./rpc/build-message.js";
import { aBuild } from "./test-support.js";

interface Planned {
  steps: PipelineStep[];
  jobs: PlannedJob[];
  stored: Job[];
  notify: number;
}

const ctx = {
  branch: "main",
  commit: "abc",
  message: "m",
  source: "api",
  sourceEvent: null,
  sourceAction: null,
  tag: null,
  env: {},
  pullRequest: null,
  creator: null,
  author: null,
  pipeline: { slug: "p", defaultBranch: "main", id: "p1" },
  organization: { slug: "o", id: "o1" },
};

/** Parses `yaml` and plans a build of it; throws on a parse error. */
function plan(yaml: string): Planned {
  const parsed = parsePipelineYaml(yaml);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  let n = 0;
  const jobs = planJobs(parsed.steps, ctx, { newId: () => `j${++n}` });
  const place = { buildId: "b", organizationId: "o1", pipelineId: "p1", buildNumber: 1, clusterId: null };
  const stored = jobs.map((j) => storedJob(j, { ...place, stepId: `s${j.stepPosition}` }, new Date(0)));
  return { steps: parsed.steps, jobs, stored, notify: (parsed.notify ?? []).length };
}

const errorsOf = (yaml: string): StepError[] => {
  const parsed = parsePipelineYaml(yaml);
  return parsed.ok ? [] : parsed.errors;
};

/** One step of `kind` written `body` (YAML lines under `- `), after an `a` step others may depend on. */
const one = (body: string) => `steps:\n  - {command: a, key: a}\n  - ${body.split("\n").join("\n    ")}\n`;
const job = (p: Planned): PlannedJob => p.jobs[p.jobs.length - 1] as PlannedJob;
const stored = (p: Planned): Job => p.stored[p.stored.length - 1] as Job;

interface Row {
  kind: AttributeKind;
  attribute: string;
  /** Where it takes effect. */
  effect: string;
  check: () => void;
}

const common = (kind: AttributeKind, body: string): Row[] => [
  {
    kind,
    attribute: "type",
    effect: "the kind of job planned",
    check: () =>
      expect(job(plan(one(`type: ${kind === "command" ? "script" : kind}\n${body}`))).type).toBe(
        { command: "script", wait: "waiter", block: "manual", input: "manual", trigger: "trigger", group: "" }[kind],
      ),
  },
  ...(["key", "id", "identifier"] as const).map((attribute) => ({
    kind,
    attribute,
    effect: "job.stepKey (REST step_key, BUILDKITE_STEP_KEY), depends_on targets",
    check: () => expect(job(plan(one(`${body}\n${attribute}: k`))).stepKey).toBe("k"),
  })),
  {
    kind,
    attribute: "depends_on",
    effect: "job.dependsOn",
    check: () => expect(job(plan(one(`${body}\ndepends_on: a`))).dependsOn).toEqual(["j1"]),
  },
  {
    kind,
    attribute: "allow_dependency_failure",
    effect: "job.allowDependencyFailure (advance-jobs)",
    check: () => expect(job(plan(one(`${body}\nallow_dependency_failure: true`))).allowDependencyFailure).toBe(true),
  },
  {
    kind,
    attribute: "if",
    effect: "the job is broken (conditional_failed) when false",
    check: () => expect(job(plan(one(`${body}\nif: build.branch == "other"`))).brokenReason).toBe("conditional_failed"),
  },
  {
    kind,
    attribute: "branches",
    effect: "the job is broken (branch_mismatch) on other branches",
    check: () => expect(job(plan(one(`${body}\nbranches: other`))).brokenReason).toBe("branch_mismatch"),
  },
  {
    kind,
    attribute: "skip",
    effect: "the job is skipped",
    check: () => expect(job(plan(one(`${body}\nskip: "not today"`))).state).toBe("skipped"),
  },
  {
    kind,
    attribute: "notify",
    effect:
      kind === "command"
        ? "the step's notify rules, which the notifications service fires (docs/notifications.md#notify)"
        : "refused: only command steps notify",
    check: () => {
      const yaml = one(`${body}\nnotify: [{slack: "https://hooks.slack.com/x"}]`);
      if (kind === "command") expect(plan(yaml).steps[1]).toHaveProperty("notify");
      else expect(errorsOf(yaml).map((e) => e.field)).toEqual(["configuration.steps[1].notify"]);
    },
  },
];

const labelRows = (kind: AttributeKind, body: string): Row[] =>
  (["label", "name"] as const).map((attribute) => ({
    kind,
    attribute,
    effect: "job.label and job.name (REST label/name, BUILDKITE_LABEL)",
    check: () => expect(job(plan(one(`${body}\n${attribute}: L`))).label).toBe("L"),
  }));

const CMD = "command: x";
const rows: Row[] = [
  ...common("command", CMD),
  ...labelRows("command", CMD),
  ...(["command", "commands"] as const).map((attribute) => ({
    kind: "command" as const,
    attribute,
    effect: "job.command (BUILDKITE_COMMAND)",
    check: () => expect(job(plan(one(`${attribute}: [echo 1, echo 2]`))).command).toBe("echo 1\necho 2"),
  })),
  ...(["artifact_paths", "artifacts"] as const).map((attribute) => ({
    kind: "command" as const,
    attribute,
    effect: "BUILDKITE_ARTIFACT_PATHS",
    check: () =>
      expect(
        jobEnvironment(aBuild(), stored(plan(one(`${CMD}\n${attribute}: "out/*"`)))).BUILDKITE_ARTIFACT_PATHS,
      ).toBe("out/*"),
  })),
  {
    kind: "command",
    attribute: "env",
    effect: "the job's environment",
    check: () => expect(jobEnvironment(aBuild(), stored(plan(one(`${CMD}\nenv: {V: "1"}`)))).V).toBe("1"),
  },
  ...(["timeout_in_minutes", "timeout"] as const).map((attribute) => ({
    kind: "command" as const,
    attribute,
    effect: "job.timeoutInMinutes (BUILDKITE_TIMEOUT, the server's deadline)",
    check: () =>
      expect(jobEnvironment(aBuild(), stored(plan(one(`${CMD}\n${attribute}: 7`)))).BUILDKITE_TIMEOUT).toBe("7"),
  })),
  ...(["agents", "agent_query_rules"] as const).map((attribute) => ({
    kind: "command" as const,
    attribute,
    effect: "job.agentQueryRules and job.queue (dispatch matches agents on them)",
    check: () => expect(job(plan(one(`${CMD}\n${attribute}: ["queue=q", "os=linux"]`))).queue).toBe("q"),
  })),
  {
    kind: "command",
    attribute: "concurrency",
    effect: "job.concurrency: the group's limit in the concurrency gate",
    check: () =>
      expect(groupJob(stored(plan(one(`${CMD}\nconcurrency: 3\nconcurrency_group: g`)))).concurrency).toBe(3),
  },
  {
    kind: "command",
    attribute: "concurrency_group",
    effect: "job.concurrencyGroup: the job waits limited for the group's slot",
    check: () => expect(job(plan(one(`${CMD}\nconcurrency: 1\nconcurrency_group: g`))).state).toBe("limited"),
  },
  {
    kind: "command",
    attribute: "concurrency_method",
    effect: "the concurrency gate admits eager jobs whenever a slot is free",
    check: () =>
      expect(
        groupJob(stored(plan(one(`${CMD}\nconcurrency: 1\nconcurrency_group: g\nconcurrency_method: eager`)))).method,
      ).toBe("eager"),
  },
  {
    kind: "command",
    attribute: "parallelism",
    effect: "that many jobs (BUILDKITE_PARALLEL_JOB, parallel_group_*)",
    check: () =>
      expect(plan(one(`${CMD}\nparallelism: 3`)).jobs.map((j) => j.parallelGroupIndex)).toEqual([null, 0, 1, 2]),
  },
  {
    kind: "command",
    attribute: "priority",
    effect: "job.priority: dispatch takes higher first",
    check: () => expect(job(plan(one(`${CMD}\npriority: 5`))).priority).toBe(5),
  },
  {
    kind: "command",
    attribute: "retry",
    effect: "automatic retries (automaticRetryRule) and manual ones (manualRetryProblem)",
    check: () => {
      const j = { ...stored(plan(one(`${CMD}\nretry: {automatic: {exit_status: 3, limit: 1}, manual: false}`))) };
      const failed = { ...j, state: "failed" as const, exitStatus: 3 };
      expect(automaticRetryRule(failed, [failed])).toMatchObject({ limit: 1 });
      expect(manualRetryProblem(failed)).toBe("This job can't be retried");
    },
  },
  {
    kind: "command",
    attribute: "signature",
    effect: "job.step.signed: the step exactly as uploaded, which the agent verifies (build-message signedStepJson)",
    check: () => {
      const signature = { algorithm: "EdDSA", signed_fields: ["command"], value: "eyJhbGciOiJFZERTQSJ9..c2ln" };
      const step = stored(plan(one(`${CMD}\nsignature: ${JSON.stringify(signature)}`))).step;
      expect(step.type === "script" && step.signed).toEqual({ signature, step: { command: "x", signature } });
    },
  },
  {
    kind: "command",
    attribute: "soft_fail",
    effect: "job.softFail: a failure with those statuses is soft",
    check: () => expect(job(plan(one(`${CMD}\nsoft_fail: [{exit_status: 2}]`))).softFail).toEqual([2]),
  },
  {
    kind: "command",
    attribute: "cancel_on_build_failing",
    effect: "the reconcile stops the step's jobs once the build is failing",
    check: () => {
      const p = plan(one(`${CMD}\ncancel_on_build_failing: true`));
      const [first, it] = p.stored as [Job, Job];
      expect(cancelOnFailingPlan([{ ...first, state: "failed" }, it])).toEqual({ cancel: ["j2"], canceling: [] });
    },
  },
  {
    kind: "command",
    attribute: "plugins",
    effect: "BUILDKITE_PLUGINS: the agent checks them out and runs them",
    check: () =>
      expect(
        JSON.parse(
          jobEnvironment(aBuild(), stored(plan(one(`${CMD}\nplugins: ["docker#v5.0.0"]`)))).BUILDKITE_PLUGINS ?? "",
        ),
      ).toEqual([{ "github.com/buildkite-plugins/docker-buildkite-plugin#v5.0.0": null }]),
  },
  {
    kind: "command",
    attribute: "matrix",
    effect: "one job per combination, interpolated, with job.matrix",
    check: () =>
      expect(plan(one(`command: echo {{matrix}}\nmatrix: [a, b]`)).jobs.map((j) => [j.command, j.matrix])).toEqual([
        ["a", null],
        ["echo a", { "": "a" }],
        ["echo b", { "": "b" }],
      ]),
  },

  ...common("wait", "wait: ~"),
  ...(["wait", "waiter"] as const).map((attribute) => ({
    kind: "wait" as const,
    attribute,
    effect: "a waiter job: the steps after it wait for the steps before it",
    check: () =>
      expect(job(plan(`steps:\n  - {command: a}\n  - ${attribute}: ~\n  - command: b`)).dependsOn).toEqual(["j2"]),
  })),
  {
    kind: "wait",
    attribute: "continue_on_failure",
    effect: "job.continueOnFailure: the steps after it run after a failure",
    check: () => expect(job(plan(one("wait: ~\ncontinue_on_failure: true"))).continueOnFailure).toBe(true),
  },

  ...(["block", "input"] as const).flatMap((kind): Row[] => {
    const body = `${kind}: B`;
    const manual = (extra: string) => stored(plan(one(`${body}\n${extra}`))).step as ManualStep;
    return [
      ...common(kind, body),
      ...labelRows(kind, kind === "block" ? "type: block" : "type: input"),
      ...(kind === "block" ? ["block", "manual"] : ["input"]).map((attribute) => ({
        kind,
        attribute,
        effect: kind === "block" ? "a blocked job the build waits at" : "a job asking for input, the build not held",
        check: () => {
          const j = job(plan(one(`${attribute}: B`)));
          expect([j.type, j.label, j.isInput]).toEqual(["manual", "B", kind === "input"]);
        },
      })),
      {
        kind,
        attribute: "prompt",
        effect: "the unblock form (Job.block)",
        check: () => expect(blockFormMessage(manual("prompt: P")).prompt).toBe("P"),
      },
      {
        kind,
        attribute: "submit",
        effect: "the unblock form's button",
        check: () => expect(blockFormMessage(manual("submit: Go")).submit).toBe("Go"),
      },
      {
        kind,
        attribute: "fields",
        effect: "the unblock form's fields, stored as build meta-data",
        check: () =>
          expect(blockFormMessage(manual("fields: [{text: T, key: k}]")).fields?.[0]).toMatchObject({ key: "k" }),
      },
      {
        kind,
        attribute: "blocked_state",
        effect: "the build's state while it waits here",
        check: () => expect(job(plan(one(`${body}\nblocked_state: running`))).blockedState).toBe("running"),
      },
      {
        kind,
        attribute: "allowed_teams",
        effect: "who may unblock (mayUnblock)",
        check: () => {
          const dev = { teams: ["dev"], readOnly: false };
          expect([
            mayUnblock(manual("allowed_teams: [ops]").allowed_teams, dev),
            mayUnblock(manual("key: x").allowed_teams, dev),
          ]).toEqual([false, true]);
        },
      },
    ];
  }),

  ...common("trigger", "trigger: other"),
  ...labelRows("trigger", "trigger: other"),
  {
    kind: "trigger",
    attribute: "trigger",
    effect: "a trigger job creating a build of that pipeline",
    check: () => expect(job(plan(one("trigger: other"))).trigger?.pipeline).toBe("other"),
  },
  {
    kind: "trigger",
    attribute: "async",
    effect: "the trigger job passes once its build is created",
    check: () => expect(job(plan(one("trigger: other\nasync: true"))).trigger?.async).toBe(true),
  },
  {
    kind: "trigger",
    attribute: "build",
    effect: "the triggered build's message, commit, branch, env and meta-data",
    check: () =>
      expect(job(plan(one("trigger: other\nbuild: {branch: dev, env: {A: b}}"))).trigger?.build).toEqual({
        branch: "dev",
        env: { A: "b" },
      }),
  },
  {
    kind: "trigger",
    attribute: "parallelism",
    effect: "that many trigger jobs",
    check: () => expect(plan(one("trigger: other\nparallelism: 2")).jobs).toHaveLength(3),
  },
  {
    kind: "trigger",
    attribute: "soft_fail",
    effect: "job.softFail: a failed triggered build is a soft failure",
    check: () => expect(job(plan(one("trigger: other\nsoft_fail: true"))).softFail).toBe(true),
  },

  ...(
    [
      ["type", "group: G\ntype: group", (p: Planned) => expect(job(p).step.group).toEqual({ label: "G" })],
      ["group", "group: G", (p: Planned) => expect(job(p).step.group).toEqual({ label: "G" })],
      ["label", "group: ~\nlabel: G", (p: Planned) => expect(job(p).step.group).toEqual({ label: "G" })],
      ["name", "group: ~\nname: G", (p: Planned) => expect(job(p).step.group).toEqual({ label: "G" })],
      ["key", "group: G\nkey: g", (p: Planned) => expect(job(p).step.group?.key).toBe("g")],
      ["id", "group: G\nid: g", (p: Planned) => expect(job(p).step.group?.key).toBe("g")],
      ["identifier", "group: G\nidentifier: g", (p: Planned) => expect(job(p).step.group?.key).toBe("g")],
      ["depends_on", "group: G\ndepends_on: a", (p: Planned) => expect(job(p).dependsOn).toEqual(["j1"])],
      [
        "allow_dependency_failure",
        "group: G\nallow_dependency_failure: true",
        (p: Planned) => expect(job(p).allowDependencyFailure).toBe(true),
      ],
      [
        "if",
        'group: G\nif: build.branch == "x"',
        (p: Planned) => expect(job(p).brokenReason).toBe("conditional_failed"),
      ],
      ["skip", "group: G\nskip: true", (p: Planned) => expect(job(p).state).toBe("skipped")],
      ["steps", "group: G", (p: Planned) => expect(job(p).command).toBe("in")],
      ["notify", "group: G\nnotify: [{email: a@b.c}]", null],
    ] as const
  ).map(
    ([attribute, body, check]): Row => ({
      kind: "group",
      attribute,
      effect: check ? "the group's steps (flattened, each carrying it)" : "refused: groups do not notify",
      check: () => {
        const yaml = one(`${body}\nsteps: [{command: in}]`);
        if (check) check(plan(yaml));
        else expect(errorsOf(yaml).map((e) => e.field)).toEqual([`configuration.steps[1].${attribute}`]);
      },
    }),
  ),
];

describe("every step attribute the parser accepts takes effect", () => {
  it.each(rows.map((r) => [r.kind, r.attribute, r.effect, r] as const))("%s %s: %s", (_k, _a, _e, row) => row.check());

  it("the table covers exactly the attributes each kind of step accepts", () => {
    for (const kind of Object.keys(STEP_ATTRIBUTES) as AttributeKind[]) {
      const covered = [...new Set(rows.filter((r) => r.kind === kind).map((r) => r.attribute))].sort();
      expect([kind, covered]).toEqual([kind, [...STEP_ATTRIBUTES[kind]].sort()]);
    }
  });

  it("refuses an attribute outside the list, naming it", () => {
    for (const [kind, body] of [
      ["command", CMD],
      ["wait", "wait: ~"],
      ["block", "block: B"],
      ["input", "input: I"],
      ["trigger", "trigger: t"],
      ["group", "group: G\nsteps: [wait]"],
    ] as const) {
      expect([kind, errorsOf(one(`${body}\nsecrets: [A]\nbogus: 1`))]).toEqual([
        kind,
        [
          { field: "configuration.steps[1].secrets", code: expect.stringMatching(/^is not supported by this server/) },
          { field: "configuration.steps[1].bogus", code: expect.stringMatching(/^is not an attribute of an? /) },
        ],
      ]);
    }
  });
});
