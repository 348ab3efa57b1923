/**
 * Turns a pipeline's steps into a new build's jobs (docs/compatibility.md#job-states, #pipeline-yaml): one job per
 * step (×parallelism), with dependencies fixed at creation, omitted steps marked, and the first runnable jobs
 * already scheduled or blocked.
 */
import type { PipelineStep, TriggerStep } from "@conveyor/ci-rules";
import { evaluateCondition, expandMatrix, matchesBranchFilter } from "@conveyor/ci-rules";
import { advance } from "./advance-jobs.js";
import { type PlannedJob, type PlannedTrigger, queueOf } from "./job.js";
import type { BrokenReason, BuildContext, JobModel, JobState, JobType } from "./types.js";

export type { PlannedJob, PlannedTrigger } from "./job.js";

/** Options of planJobs. `newId` is called once per job, in job order. */
export interface PlanOptions {
  newId: () => string;
  /** The pipeline's command step timeouts in minutes: the default for steps without one, and the cap on all. */
  timeouts?: { default: number | null; maximum: number | null };
  /**
   * Job ids of steps already in the build, by step or group key (a pipeline upload adds steps to a running
   * build): `depends_on` may name them.
   */
  existingKeys?: ReadonlyMap<string, readonly string[]>;
  /**
   * Where the steps go in a build that has jobs already (a pipeline upload): the last barrier before that place and
   * the jobs since it. A barrier among the new steps waits for those jobs too, as a wait step waits for every step
   * before it.
   */
  after?: { barrier: string | null; since: readonly string[] };
}

/** A command step's timeout: its own (or the pipeline's default), never past the pipeline's maximum. */
export function effectiveTimeout(own: number | undefined, timeouts: PlanOptions["timeouts"]): number | null {
  const wanted = own ?? timeouts?.default ?? null;
  const maximum = timeouts?.maximum ?? null;
  if (wanted === null) return maximum;
  return maximum === null ? wanted : Math.min(wanted, maximum);
}

/**
 * Plans the jobs of a new build from `steps`, then runs `advance` once so jobs with nothing to wait for are
 * `scheduled` (block/input steps `blocked`, waiters `passed`).
 *
 * Jobs: a script step makes a `script` job, ×`parallelism` (index 0..n-1 of n; without `parallelism` both are
 * null), or one per combination of its `matrix` (`matrix` and `matrixIndex` set, parallel fields null); a trigger step a `trigger` job (×`parallelism` too); a wait step a `waiter`; block and input steps a
 * `manual` job (`blockedState` from the step, default "passed"; input: `isInput`).
 *
 * Omitted steps (their jobs never run, and never hold up other jobs):
 * - `skip: true` or a non-empty reason → `skipped` (checked first: the author switched the step off);
 * - `branches:` not matching `ctx.branch` → `broken`, `branch_mismatch`. Step filters always apply; the
 *   pipeline's own branch filter (and `ignore_pipeline_branch_filters`) is the caller's check;
 * - `if:` false, or failing to evaluate → `broken`, `conditional_failed` (never throws).
 *
 * Dependencies:
 * - A barrier is a wait step or a block step (not input) that is not omitted. Every job depends on the most
 *   recent barrier before it; a barrier depends on every job since the previous barrier, and on that barrier.
 *   An omitted wait or block is no barrier (otherwise, being finished, it would release the jobs behind it early).
 * - Inside a group (consecutive steps with the same `group`, by key or else label), a barrier only orders the
 *   group's own steps, and the group's steps start from the last top-level barrier before the group; a later
 *   top-level barrier waits for the whole group. So consecutive groups run side by side.
 * - `depends_on` adds the jobs of the named steps (all parallel jobs) or of every step of the named group;
 *   unknown keys are ignored (pipeline validation reports them). An empty `depends_on` (`~` or `[]`) means no
 *   implicit dependency on the previous barrier: the step runs at once. `allow_failure` on an entry puts those
 *   jobs in `allowFailureOf`; `allow_dependency_failure` sets `allowDependencyFailure` (all dependencies).
 * - Input steps are ordinary jobs here: they wait for the barrier before them and a later barrier waits for them,
 *   but the steps after them do not.
 */
export function planJobs(steps: readonly PipelineStep[], ctx: BuildContext, opts: PlanOptions): PlannedJob[] {
  return advance(planSteps(steps, ctx, opts));
}

/**
 * The jobs of `steps` with their dependencies, all `pending` except omitted ones: planJobs without the first
 * advance, for steps added to a build whose other jobs decide when they run.
 */
export function planSteps(steps: readonly PipelineStep[], ctx: BuildContext, opts: PlanOptions): PlannedJob[] {
  const jobsByStep = steps.map((step, stepIndex) => jobsOf(step, stepIndex, omission(step, ctx), opts));
  const idsByStep = jobsByStep.map((jobs) => jobs.map((job) => job.id));
  addImplicitDependencies(steps, jobsByStep, idsByStep, opts.after);
  addExplicitDependencies(steps, jobsByStep, idsByStep, opts.existingKeys);
  return jobsByStep.flat();
}

type Omission = { state: "skipped"; reason: null } | { state: "broken"; reason: BrokenReason } | null;

function omission(step: PipelineStep, ctx: BuildContext): Omission {
  if (step.skip === true || (typeof step.skip === "string" && step.skip !== ""))
    return { state: "skipped", reason: null };
  if (!matchesBranchFilter(step.branch_configuration, ctx.branch))
    return { state: "broken", reason: "branch_mismatch" };
  if (step.if !== undefined) {
    const result = evaluateCondition(step.if, ctx);
    if (!result.ok || !result.value) return { state: "broken", reason: "conditional_failed" };
  }
  return null;
}

const JOB_TYPES: Record<PipelineStep["type"], JobType> = {
  script: "script",
  trigger: "trigger",
  waiter: "waiter",
  manual: "manual",
};

/**
 * The jobs of one step: one, `parallelism` of them, or one per combination of its `matrix` (each job's `step` is the
 * step as that combination runs it: tokens replaced, the adjustment's soft_fail; docs/compatibility.md#build-matrix).
 */
function jobsOf(step: PipelineStep, stepIndex: number, omitted: Omission, opts: PlanOptions): PlannedJob[] {
  const matrixJobs = step.type === "script" ? expandMatrix(step) : null;
  if (matrixJobs) {
    return matrixJobs.map((m, index) => ({
      ...jobOf(m.step, stepIndex, omitted, opts, null),
      matrix: m.permutation,
      matrixIndex: index,
    }));
  }
  const parallelism = step.type === "script" || step.type === "trigger" ? step.parallelism : undefined;
  const total = parallelism === undefined ? null : Math.max(1, Math.floor(parallelism));
  const jobs: PlannedJob[] = [];
  for (let index = 0; index < (total ?? 1); index++) {
    jobs.push(jobOf(step, stepIndex, omitted, opts, total === null ? null : { index, total }));
  }
  return jobs;
}

function jobOf(
  step: PipelineStep,
  stepIndex: number,
  omitted: Omission,
  opts: PlanOptions,
  parallel: { index: number; total: number } | null,
): PlannedJob {
  const state: JobState = omitted?.state ?? "pending";
  const name = stepName(step);
  return {
    id: opts.newId(),
    type: JOB_TYPES[step.type],
    stepPosition: stepIndex,
    stepKey: step.key ?? null,
    state,
    dependsOn: [],
    allowDependencyFailure: step.allow_dependency_failure ?? false,
    continueOnFailure: step.type === "waiter" ? (step.continue_on_failure ?? false) : false,
    blockedState: step.type === "manual" ? (step.blocked_state ?? "passed") : null,
    isInput: step.type === "manual" ? (step.is_input ?? false) : false,
    softFail: step.type === "script" || step.type === "trigger" ? copySoftFail(step.soft_fail) : null,
    exitStatus: null,
    softFailed: false,
    brokenReason: omitted?.state === "broken" ? omitted.reason : null,
    retried: false,
    name,
    label: name,
    command: step.type === "script" ? step.command : null,
    agentQueryRules: step.type === "script" ? [...step.agent_query_rules] : [],
    queue: step.type === "script" ? queueOf(step.agent_query_rules) : null,
    env: step.type === "script" ? { ...step.env } : {},
    artifactPaths: step.type === "script" ? (step.artifact_paths ?? null) : null,
    timeoutInMinutes: step.type === "script" ? effectiveTimeout(step.timeout_in_minutes, opts.timeouts) : null,
    priority: step.type === "script" ? (step.priority ?? 0) : 0,
    parallelGroupIndex: parallel?.index ?? null,
    parallelGroupTotal: parallel?.total ?? null,
    matrix: null,
    matrixIndex: null,
    concurrency: step.type === "script" || step.type === "trigger" ? (step.concurrency ?? null) : null,
    concurrencyGroup: step.type === "script" ? (step.concurrency_group ?? null) : null,
    trigger: step.type === "trigger" ? plannedTrigger(step) : null,
    step,
  };
}

function stepName(step: PipelineStep): string {
  switch (step.type) {
    case "script":
      return step.name;
    case "waiter":
      return "";
    case "manual":
    case "trigger":
      return step.label;
  }
}

function copySoftFail(softFail: true | Array<number | "*"> | undefined): JobModel["softFail"] {
  if (softFail === undefined) return null;
  return softFail === true ? true : [...softFail];
}

function plannedTrigger(step: TriggerStep): PlannedTrigger {
  return { pipeline: step.pipeline, async: step.async, build: { ...step.build } };
}

function isBarrier(step: PipelineStep, job: PlannedJob | undefined): boolean {
  if (job === undefined || job.state === "skipped" || job.state === "broken") return false;
  return step.type === "waiter" || (step.type === "manual" && step.is_input !== true);
}

interface Scope {
  barrier: string | null;
  since: string[];
}

interface GroupScope extends Scope {
  identity: string;
}

function groupIdentity(step: PipelineStep): string | null {
  if (!step.group) return null;
  return step.group.key === undefined ? `label:${step.group.label}` : `key:${step.group.key}`;
}

function addImplicitDependencies(
  steps: readonly PipelineStep[],
  jobsByStep: PlannedJob[][],
  idsByStep: string[][],
  after: PlanOptions["after"],
): void {
  const top: Scope = { barrier: after?.barrier ?? null, since: [...(after?.since ?? [])] };
  // Widened on purpose: the loop reassigns it, and TypeScript would otherwise narrow it to null for good.
  let group = null as GroupScope | null;
  for (const [stepIndex, step] of steps.entries()) {
    const jobs = jobsByStep[stepIndex] ?? [];
    const ids = idsByStep[stepIndex] ?? [];
    const identity = groupIdentity(step);
    if (identity === null) group = null;
    else if (group?.identity !== identity) group = { identity, barrier: null, since: [] };
    const previousBarrier = group?.barrier ?? top.barrier;
    const [first] = jobs;
    if (first && isBarrier(step, first)) {
      const scope = group ?? top;
      first.dependsOn.push(...scope.since, ...(previousBarrier === null ? [] : [previousBarrier]));
      scope.barrier = first.id;
      scope.since = [];
      if (group) top.since.push(first.id);
      continue;
    }
    const explicitlyNone = step.depends_on !== undefined && step.depends_on.length === 0;
    if (previousBarrier !== null && !explicitlyNone) for (const job of jobs) job.dependsOn.push(previousBarrier);
    group?.since.push(...ids);
    top.since.push(...ids);
  }
}

function addExplicitDependencies(
  steps: readonly PipelineStep[],
  jobsByStep: PlannedJob[][],
  idsByStep: string[][],
  existingKeys: ReadonlyMap<string, readonly string[]> = new Map(),
): void {
  const idsByKey = new Map<string, string[]>([...existingKeys].map(([key, ids]) => [key, [...ids]]));
  const remember = (key: string | undefined, ids: string[]) => {
    if (key === undefined) return;
    idsByKey.set(key, [...(idsByKey.get(key) ?? []), ...ids]);
  };
  steps.forEach((step, stepIndex) => {
    const ids = idsByStep[stepIndex] ?? [];
    remember(step.key, ids);
    remember(step.group?.key, ids);
  });
  steps.forEach((step, stepIndex) => {
    const own = new Set(idsByStep[stepIndex]);
    for (const job of jobsByStep[stepIndex] ?? []) {
      for (const dependency of step.depends_on ?? []) {
        const ids = (idsByKey.get(dependency.step) ?? []).filter((id) => !own.has(id));
        job.dependsOn.push(...ids);
        if (dependency.allow_failure) job.allowFailureOf = [...(job.allowFailureOf ?? []), ...ids];
      }
      job.dependsOn = [...new Set(job.dependsOn)];
      if (job.allowFailureOf) job.allowFailureOf = [...new Set(job.allowFailureOf)];
    }
  });
}
