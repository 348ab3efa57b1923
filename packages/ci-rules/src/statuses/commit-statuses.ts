/**
 * Which commit statuses a build or job event produces (docs/statuses.md): the pipeline's status settings
 * (`publish_commit_status`, `publish_commit_status_per_step`, `publish_blocked_as_pending`,
 * `use_step_key_as_commit_status`, `separate_pull_request_statuses`) and the YAML's `notify: - github_commit_status:`
 * at build and step level. Pure: the caller gives the build, the job and how `if:` conditions evaluate.
 */

import { DEFAULT_PROVIDER_SETTINGS } from "../webhooks/provider-settings.js";
import {
  boundedText,
  durationSuffix,
  MAX_STATUS_CONTEXT_LENGTH,
  MAX_STATUS_DESCRIPTION_LENGTH,
} from "./status-text.js";

/** The four states every forge's status API has a word for (each client maps them to its own). */
export const COMMIT_STATUS_STATES = ["pending", "success", "failure", "error"] as const;
export type CommitStatusState = (typeof COMMIT_STATUS_STATES)[number];

/** The status settings of a pipeline's provider settings. */
export interface StatusSettings {
  publishCommitStatus: boolean;
  publishCommitStatusPerStep: boolean;
  publishBlockedAsPending: boolean;
  useStepKeyAsCommitStatus: boolean;
  separatePullRequestStatuses: boolean;
}

/** Reads the status settings of a pipeline's provider settings (a setting it lacks has Buildkite's default). */
export function statusSettings(settings: Readonly<Record<string, unknown>>): StatusSettings {
  const flag = (key: keyof typeof DEFAULT_PROVIDER_SETTINGS): boolean => {
    const value = settings[key];
    return typeof value === "boolean" ? value : DEFAULT_PROVIDER_SETTINGS[key] === true;
  };
  return {
    publishCommitStatus: flag("publish_commit_status"),
    publishCommitStatusPerStep: flag("publish_commit_status_per_step"),
    publishBlockedAsPending: flag("publish_blocked_as_pending"),
    useStepKeyAsCommitStatus: flag("use_step_key_as_commit_status"),
    separatePullRequestStatuses: flag("separate_pull_request_statuses"),
  };
}

/** One `notify: - github_commit_status: {…}` entry, at build or step level. */
export interface CommitStatusNotification {
  /** `context:`; null for the default (the build's or the step's context). */
  context: string | null;
  /** `blocked_builds_as_pending:` (build level only). */
  blockedBuildsAsPending: boolean;
  /** `if:`; null when the entry has none. */
  condition: string | null;
}

/** What the rules read of a build. */
export interface StatusBuild {
  number: number;
  /** The build's state as REST shows it; with `blocked`, the block step's blocked_state. */
  state: string;
  blocked: boolean;
  commit: string;
  /** Whether the build is a pull request's. */
  pullRequest: boolean;
  pipelineSlug: string;
  webUrl: string;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** Bumped on every change of the build: orders its statuses. */
  version: number;
  /** The build-level `github_commit_status` notifications. */
  notify: readonly CommitStatusNotification[];
}

/** What the rules read of a job. */
export interface StatusJob {
  id: string;
  /** script, waiter, manual or trigger. */
  type: string;
  label: string;
  stepKey: string;
  state: string;
  softFailed: boolean;
  startedAt: Date | null;
  finishedAt: Date | null;
  retriesCount: number;
  parallelGroupIndex: number | null;
  parallelGroupTotal: number | null;
  /** The step-level `github_commit_status` notifications. */
  notify: readonly CommitStatusNotification[];
}

export type StatusEvent = { kind: "build"; build: StatusBuild } | { kind: "job"; build: StatusBuild; job: StatusJob };

/** A status to set on the build's commit. */
export interface CommitStatus {
  context: string;
  state: CommitStatusState;
  description: string;
  targetUrl: string;
  /** Whether an `error` comes of a cancellation (GitLab says `canceled`, Bitbucket `STOPPED`). */
  canceled: boolean;
  /**
   * Orders the statuses of one commit and context (compare with compareStatusOrder): one is sent only when its order
   * is above that of the last one sent, so a late `pending` never overwrites a final state.
   */
  order: readonly number[];
}

/** A full commit SHA (SHA-1 or SHA-256): forges take statuses only for these, as Buildkite does. */
export function isFullCommitSha(commit: string): boolean {
  return /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/i.test(commit);
}

/** Negative, zero or positive as `a` is before, the same as or after `b` (element by element, shorter first). */
export function compareStatusOrder(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/**
 * The statuses an event produces, one per context. `conditionHolds` evaluates a notification's `if:` for this event
 * (a condition that cannot be evaluated should answer false). An event of a build whose commit is not a full SHA
 * produces none.
 */
export function commitStatusesFor(
  event: StatusEvent,
  settings: StatusSettings,
  conditionHolds: (condition: string) => boolean,
): CommitStatus[] {
  const { build } = event;
  if (!isFullCommitSha(build.commit)) return [];
  const base = baseContext(build, settings);
  const statuses = new Map<string, CommitStatus>();
  const add = (context: string, state: StatusWords | null, order: readonly number[], targetUrl: string) => {
    const bounded = boundedText(context, MAX_STATUS_CONTEXT_LENGTH);
    if (state === null || bounded === "") return;
    statuses.set(bounded, {
      context: bounded,
      state: state.state,
      description: boundedText(state.description, MAX_STATUS_DESCRIPTION_LENGTH),
      targetUrl,
      canceled: state.canceled === true,
      order,
    });
  };
  const holds = (n: CommitStatusNotification) => n.condition === null || conditionHolds(n.condition);
  if (event.kind === "build") {
    const order = [build.number, build.version];
    if (settings.publishCommitStatus)
      add(base, buildStatus(build, settings.publishBlockedAsPending), order, build.webUrl);
    for (const n of build.notify.filter(holds)) {
      add(n.context ?? base, buildStatus(build, n.blockedBuildsAsPending), order, build.webUrl);
    }
    return [...statuses.values()];
  }
  const { job } = event;
  if (job.type !== "script") return [];
  const order = [build.number, job.retriesCount, jobStateRank(job.state)];
  const stepContext = `${base}/${stepName(job, settings.useStepKeyAsCommitStatus)}`;
  const words = jobStatus(job);
  const targetUrl = `${build.webUrl}#${job.id}`;
  if (settings.publishCommitStatus && settings.publishCommitStatusPerStep) add(stepContext, words, order, targetUrl);
  for (const n of job.notify.filter(holds)) add(n.context ?? stepContext, words, order, targetUrl);
  return [...statuses.values()];
}

interface StatusWords {
  state: CommitStatusState;
  description: string;
  canceled?: boolean;
}

/** `buildkite/<pipeline-slug>`, with `/pr` for a pull request's build when its statuses are kept apart. */
function baseContext(build: StatusBuild, settings: StatusSettings): string {
  const context = `buildkite/${build.pipelineSlug}`;
  return settings.separatePullRequestStatuses && build.pullRequest ? `${context}/pr` : context;
}

/** A build's status, or null for a state that sets none (canceling: the canceled state follows). */
export function buildStatus(build: StatusBuild, blockedAsPending: boolean): StatusWords | null {
  const name = `Build #${build.number}`;
  const took = durationSuffix(build.startedAt, build.finishedAt);
  if (build.blocked) {
    if (build.state === "failed" || build.state === "failing") {
      return { state: "failure", description: `${name} is blocked after a failure` };
    }
    if (build.state === "running" || blockedAsPending) return { state: "pending", description: `${name} is blocked` };
    return { state: "success", description: `${name} is blocked` };
  }
  switch (build.state) {
    case "scheduled":
      return { state: "pending", description: `${name} is scheduled` };
    case "running":
      return { state: "pending", description: `${name} is running` };
    case "failing":
      return { state: "failure", description: `${name} is failing` };
    case "passed":
      return { state: "success", description: `${name} passed${took}` };
    case "failed":
      return { state: "failure", description: `${name} failed${took}` };
    case "canceled":
      return { state: "error", description: `${name} was canceled${took}`, canceled: true };
    case "skipped":
      // Buildkite reports skipped builds as failed on the commit status API.
      return { state: "failure", description: `${name} was skipped` };
    case "not_run":
      return { state: "error", description: `${name} did not run` };
    default:
      return null;
  }
}

/** A job's status, or null for a state that sets none (waiting, blocked, broken, skipped). */
export function jobStatus(job: StatusJob): StatusWords | null {
  const name = job.label.trim() === "" ? "Job" : job.label.trim();
  const took = durationSuffix(job.startedAt, job.finishedAt);
  switch (job.state) {
    case "scheduled":
    case "assigned":
    case "accepted":
    case "limiting":
    case "limited":
      return { state: "pending", description: `${name} is scheduled` };
    case "running":
    case "canceling":
    case "timing_out":
      return { state: "pending", description: `${name} is running` };
    case "passed":
      return { state: "success", description: `${name} passed${took}` };
    case "failed":
      return job.softFailed
        ? { state: "success", description: `${name} soft failed${took}` }
        : { state: "failure", description: `${name} failed${took}` };
    case "timed_out":
      return { state: "failure", description: `${name} timed out${took}` };
    case "canceled":
      return { state: "error", description: `${name} was canceled${took}`, canceled: true };
    case "expired":
      return { state: "error", description: `${name} expired before an agent ran it` };
    default:
      return null;
  }
}

/** Scheduled before running before finished, so that within one attempt a late event never wins. */
function jobStateRank(state: string): number {
  switch (state) {
    case "scheduled":
    case "assigned":
    case "accepted":
    case "limiting":
    case "limited":
      return 1;
    case "running":
    case "canceling":
    case "timing_out":
      return 2;
    default:
      return 3;
  }
}

/** The step's part of a per-step context: its key (with use_step_key_as_commit_status, when it has one), else its label. */
function stepName(job: StatusJob, useKey: boolean): string {
  const label = job.label.replace(/\s+/g, " ").trim();
  const key = job.stepKey.trim();
  let name = useKey && key !== "" ? key : label !== "" ? label : key !== "" ? key : job.id;
  if (job.parallelGroupTotal !== null && job.parallelGroupTotal > 1 && job.parallelGroupIndex !== null) {
    name = `${name} (${job.parallelGroupIndex + 1}/${job.parallelGroupTotal})`;
  }
  return name;
}
