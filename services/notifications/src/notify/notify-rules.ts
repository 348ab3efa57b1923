import type { BuildContext } from "@conveyor/ci-rules";
import type { Build } from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";

/**
 * Which `notify:` event a builds-service event is (docs/notifications.md#notify): build.scheduled when created,
 * build.running when it starts, build.failing, build.blocked when it stops at a block step, build.finished when it
 * ends (a skipped build notifies nothing); and step.finished when a job of a step ends. Pure.
 */
export function notifyBuildEvent(kind: string, state: string, previousState: string): string | null {
  if (kind === "build_finished") return state === "skipped" ? null : "build.finished";
  if (kind === "build_created") return state === "scheduled" ? "build.scheduled" : null;
  if (kind !== "build_state_changed" || state === previousState) return null;
  if (state === "running") return previousState === "failing" ? null : "build.running";
  if (state === "failing") return "build.failing";
  if (state === "blocked") return "build.blocked";
  return null;
}

/** The job states that end a job. */
export const ENDED_JOB_STATES = new Set(["passed", "failed", "timed_out", "canceled", "broken", "expired"]);
/** The ended states that fail a step (unless soft-failed). */
const FAILED_JOB_STATES = new Set(["failed", "timed_out", "broken", "expired"]);

/** The fields of a job the step events are decided from. */
export interface StepJob {
  id: string;
  stepId: string;
  state: string;
  softFailed: boolean;
  retried: boolean;
  finishedAtMs: number;
}

/**
 * The step events a job's change is (docs/notifications.md#notify), given the other jobs of its build as read after
 * it: `step.finished` when the job ends; `step.failing` as well when it is the first job of its step to fail hard
 * (not soft-failed; the earliest to finish, ties by id, so that a step is failing once however its events arrive)
 * while another job of the step has not ended — Buildkite's step state `failing`. Retried attempts do not count. Pure.
 */
export function notifyStepEvents(job: StepJob, previousState: string, buildJobs: readonly StepJob[]): string[] {
  if (job.state === previousState || !ENDED_JOB_STATES.has(job.state)) return [];
  const events: string[] = [];
  const failedHard = (j: StepJob) => FAILED_JOB_STATES.has(j.state) && !j.softFailed;
  if (failedHard(job)) {
    const siblings = buildJobs.filter((j) => j.stepId === job.stepId && j.id !== job.id && !j.retried);
    const earlier = siblings.some(
      (j) =>
        failedHard(j) && (j.finishedAtMs < job.finishedAtMs || (j.finishedAtMs === job.finishedAtMs && j.id < job.id)),
    );
    if (!earlier && siblings.some((j) => !ENDED_JOB_STATES.has(j.state))) events.push("step.failing");
  }
  events.push("step.finished");
  return events;
}

/** What a build's `if:` sees, from the build as the event carries it (build.state included). */
export function notifyContext(build: Build, pipeline: Pipeline, orgSlug: string): BuildContext {
  const pr = build.pullRequest;
  return {
    id: build.id,
    number: build.number,
    branch: build.branch,
    state: build.state,
    commit: build.commit,
    message: build.message,
    source: build.source,
    sourceEvent: build.sourceEvent || null,
    sourceAction: build.sourceAction || null,
    tag: build.tag || null,
    env: build.env,
    pullRequest:
      pr && (pr.id || pr.base)
        ? {
            id: pr.id || null,
            baseBranch: pr.base || null,
            draft: null,
            labels: [],
            repository: pr.repository || null,
            fork: null,
          }
        : null,
    creator: build.creator?.id ? { id: build.creator.id, name: build.creator.name, email: build.creator.email } : null,
    author:
      build.author && (build.author.name || build.author.email)
        ? { name: build.author.name, email: build.author.email }
        : null,
    pipeline: { slug: pipeline.slug, defaultBranch: pipeline.defaultBranch, id: pipeline.id },
    organization: { slug: orgSlug, id: build.organizationId },
  };
}

const STATE_WORDS: Record<string, string> = {
  scheduled: "is scheduled",
  running: "started",
  failing: "is failing",
  blocked: "is blocked",
  passed: "passed",
  failed: "failed",
  canceled: "was canceled",
  not_run: "did not run",
};

/** What a notification says of a build: "Build #12 of Web failed". */
export function buildSentence(pipelineName: string, number: number, state: string): string {
  return `Build #${number} of ${pipelineName} ${STATE_WORDS[state] ?? state}`;
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);

/** An email about a build: subject, plain text and HTML, both with the build's link. */
export function buildEmail(b: {
  pipelineName: string;
  number: number;
  state: string;
  branch: string;
  commit: string;
  message: string;
  webUrl: string;
}) {
  const sentence = buildSentence(b.pipelineName, b.number, b.state);
  const lines: Array<[string, string]> = [
    ["Branch", b.branch],
    ["Commit", b.commit],
    ["Message", b.message.split("\n")[0] ?? ""],
  ];
  return {
    subject: `[${b.pipelineName}] ${sentence} (${b.branch})`,
    text: `${sentence}.\n\n${lines.map(([k, v]) => `${k}: ${v}`).join("\n")}\n\n${b.webUrl}\n`,
    html:
      `<p>${escapeHtml(sentence)}.</p><table>` +
      lines.map(([k, v]) => `<tr><th align="left">${k}</th><td>${escapeHtml(v)}</td></tr>`).join("") +
      `</table><p><a href="${escapeHtml(b.webUrl)}">${escapeHtml(b.webUrl)}</a></p>`,
  };
}

/** A Slack message about a build (mrkdwn with its link), or the rule's own message with the link after it. */
export function slackText(sentence: string, webUrl: string, message?: string): string {
  const link = `<${webUrl}|${sentence.replace(/[<>|]/g, "")}>`;
  return message ? `${message}\n${link}` : link;
}
