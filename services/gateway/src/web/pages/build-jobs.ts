import type { Job } from "@conveyor/proto/builds";
import { LRUCache } from "lru-cache";
import { durationOf, personName, stateBadge, timeTag } from "../format.js";
import { html, type SafeHtml, trusted } from "../html.js";
import { agentPath, buildPath } from "../paths.js";
import { jobLogPath, jobPath } from "./build-paths.js";
import { renderUnblockForm, type UnblockAttempt } from "./build-unblock-form.js";

/** What rendering a build's jobs needs beyond the jobs: where they are, what the person may do, what is open. */
export interface JobRowContext {
  orgSlug: string;
  pipelineSlug: string;
  buildNumber: number;
  /** Whether the person may build the pipeline (retry a job). */
  canBuild: boolean;
  /** Whether the person may unblock this block step (build-data.ts's mayUnblock). */
  mayUnblock(job: Job): boolean;
  /** The hidden CSRF input every form carries (a job's retry button submits the list's RETRY_FORM, which has it). */
  csrf: SafeHtml;
  /** The time durations of running jobs run to. */
  now: number;
  /** The job shown open with its panel (its log), when the page was asked for one (`?job=`). */
  opened?: { jobId: string; panel: SafeHtml };
  /** An unblock just refused for its values: the step is shown with them and the problems. */
  unblock?: UnblockAttempt;
  /** Rendered rows kept for the next request, under the build's version (build-reader.ts): see keptRowKey. */
  rows?: JobRowCache;
  /** The builds service's version of the build the jobs are of; "" keeps no row. */
  version?: string;
}

/** The id of the form every job's retry button submits (one per list, with the CSRF token: rows carry none). */
export const RETRY_FORM = "job-retry";

/** What the kept rows' HTML may take, per gateway. */
const ROW_BYTES = 16 * 1024 * 1024;

/**
 * Rendered job rows, kept by everything they show (see keptRowKey): a build of 200 jobs that did not change is not
 * rendered again at each view, only its running jobs, its waiting block steps and the open one.
 */
export function createJobRowCache() {
  return new LRUCache<string, string>({
    maxSize: ROW_BYTES,
    sizeCalculation: (row, key) => 2 * (row.length + key.length),
  });
}

/** Rendered job rows kept by createJobRowCache. */
export type JobRowCache = ReturnType<typeof createJobRowCache>;

/**
 * The key a row is kept under: the build's version (which names every job and attempt), the job, and what of the
 * person and the page the row shows (where it is, whether they may retry). No key, and the row is rendered every
 * time, for a row that shows more: the open job (its log), an unblock just refused (the values), a waiting block
 * step (its form carries the session's CSRF token) and a running job (its duration runs to now).
 */
function keptRowKey(job: Job, ctx: JobRowContext): string | undefined {
  if (!ctx.rows || !ctx.version) return undefined;
  if (ctx.opened?.jobId === job.id || ctx.unblock?.jobId === job.id) return undefined;
  if (job.type === "manual" && job.state === "blocked") return undefined;
  if (job.startedAt && !job.finishedAt) return undefined;
  return [ctx.version, job.id, ctx.orgSlug, ctx.pipelineSlug, ctx.buildNumber, ctx.canBuild].join("\0");
}

/** A job with the earlier attempts its retries replaced, oldest first. */
export interface JobAttempts {
  job: Job;
  attempts: Job[];
}

const position = (j: Job) => [j.stepPosition, j.parallelGroupIndex ?? 0] as const;

/**
 * A build's jobs as the page lists them: in step order (parallel jobs by index), each current job with the attempts
 * it replaced. An attempt's final one is found along retried_in_job_id.
 */
export function jobsInOrder(jobs: readonly Job[]): JobAttempts[] {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const finalOf = (job: Job) => {
    let current = job;
    for (let hops = 0; current.retried && hops < jobs.length; hops++) {
      const next = byId.get(current.retriedInJobId);
      if (!next) break;
      current = next;
    }
    return current;
  };
  const attempts = new Map<string, Job[]>();
  const shown: Job[] = [];
  for (const job of jobs) {
    const final = job.retried ? finalOf(job) : job;
    if (final === job) shown.push(job);
    else attempts.set(final.id, [...(attempts.get(final.id) ?? []), job]);
  }
  const byTime = (a: Job, b: Job) => Number(a.createdAt?.seconds ?? 0n) - Number(b.createdAt?.seconds ?? 0n);
  shown.sort((a, b) => {
    const [pa, ia] = position(a);
    const [pb, ib] = position(b);
    return pa - pb || ia - ib || byTime(a, b);
  });
  return shown.map((job) => ({ job, attempts: (attempts.get(job.id) ?? []).sort(byTime) }));
}

/** The name a job is shown under: its label, its name, its command's first line. */
export function jobTitle(job: Job): string {
  return job.label || job.name || job.command.split("\n")[0] || (job.type === "waiter" ? "Wait" : "(unnamed step)");
}

/** How a retried attempt was retried: automatically, or by whom. */
function retriedHow(job: Job): string {
  if (!job.retried) return "";
  if (job.retryType === "automatic") return "retried automatically";
  const by = personName(job.retriedBy);
  return by ? `retried by ${by}` : "retried";
}

/** The small facts shown beside a job's name: duration, agent, exit status, parallel index. */
function jobMeta(job: Job, now: number): SafeHtml {
  const parts: SafeHtml[] = [];
  const took = durationOf(job.startedAt, job.finishedAt, now);
  if (took) parts.push(html`<span class="job-duration">${took}</span>`);
  if (job.agent?.id) parts.push(html`<span class="job-agent">${job.agent.name}</span>`);
  if (job.exitStatus !== undefined) parts.push(html`<span class="job-exit">exit ${job.exitStatus}</span>`);
  if (job.softFailed) parts.push(html`<span class="tag soft-failed">soft failed</span>`);
  if (job.parallelGroupTotal)
    parts.push(html`<span class="job-parallel">${(job.parallelGroupIndex ?? 0) + 1}/${job.parallelGroupTotal}</span>`);
  return html`<span class="job-meta">${parts}</span>`;
}

/** The earlier attempts of a job, each its own anchor, with a link to its log. */
function attemptsList(attempts: readonly Job[], ctx: JobRowContext): SafeHtml {
  if (attempts.length === 0) return html``;
  const { orgSlug, pipelineSlug, buildNumber } = ctx;
  return html`<details class="attempts"><summary>${attempts.length} earlier ${attempts.length === 1 ? "attempt" : "attempts"}</summary><ol>
${attempts.map(
  (
    a,
  ) => html`<li id="${a.id}" class="attempt">${stateBadge(a.state)} ${jobMeta(a, ctx.now)} <span class="muted">${retriedHow(a)}</span>
<a href="${jobLogPath(orgSlug, pipelineSlug, buildNumber, a.id)}">Log of this attempt</a></li>`,
)}
</ol></details>`;
}

/** The job's panel slot: its panel when open, else links that open it (the pages' script loads it in place). */
function panelSlot(job: Job, ctx: JobRowContext): SafeHtml {
  if (ctx.opened?.jobId === job.id) return html`<div class="job-panel-slot" data-loaded>${ctx.opened.panel}</div>`;
  const here = `${buildPath(ctx.orgSlug, ctx.pipelineSlug, ctx.buildNumber)}?job=${encodeURIComponent(job.id)}#${encodeURIComponent(job.id)}`;
  return html`<div class="job-panel-slot"><p><a href="${here}">Show the log</a></p></div>`;
}

/** A command job: its name, state and facts; opened, its command, agent, attempts, retry and log. */
function scriptJob(job: Job, attempts: readonly Job[], ctx: JobRowContext): SafeHtml {
  const { orgSlug, pipelineSlug, buildNumber } = ctx;
  const open = ctx.opened?.jobId === job.id;
  const panelUrl = `${jobLogPath(orgSlug, pipelineSlug, buildNumber, job.id)}?fragment=1`;
  const retry =
    ctx.canBuild && !job.retried && job.manualRetryProblem === ""
      ? html`<button type="submit" form="${RETRY_FORM}" formaction="${jobPath(orgSlug, pipelineSlug, buildNumber, job.id)}/retry">Retry</button>`
      : "";
  const agent = job.agent?.id
    ? html`<dt>Agent</dt><dd><a href="${agentPath(orgSlug, job.agent.id)}">${job.agent.name}</a></dd>`
    : "";
  return html`<details class="job-details"${open ? html` open` : ""} data-panel="${panelUrl}">
<summary>${stateBadge(job.state)} <span class="job-name">${jobTitle(job)}</span> ${jobMeta(job, ctx.now)}</summary>
<div class="job-body">
<dl class="facts job-facts">
${job.command ? html`<dt>Command</dt><dd><pre class="command">${job.command}</pre></dd>` : ""}
${agent}
${job.exitStatus !== undefined ? html`<dt>Exit status</dt><dd>${job.exitStatus}${job.signal ? html` (${job.signal}${job.signalReason ? html`, ${job.signalReason}` : ""})` : ""}</dd>` : ""}
${job.startedAt ? html`<dt>Started</dt><dd>${timeTag(job.startedAt)}</dd>` : ""}
${job.finishedAt ? html`<dt>Finished</dt><dd>${timeTag(job.finishedAt)}</dd>` : ""}
${job.retrySource ? html`<dt>Attempt</dt><dd>${job.retriesCount + 1} (a ${job.retrySource.retryType} retry)</dd>` : ""}
</dl>
<div class="actions">${retry}<a href="${jobLogPath(orgSlug, pipelineSlug, buildNumber, job.id)}">Open the log</a></div>
${attemptsList(attempts, ctx)}
${panelSlot(job, ctx)}
</div>
</details>`;
}

/** A block or input step: its prompt, who unblocked it, or the form to unblock it for people who may. */
function blockJob(job: Job, ctx: JobRowContext): SafeHtml {
  const waiting = job.state === "blocked";
  const form =
    waiting && ctx.mayUnblock(job)
      ? renderUnblockForm(job, `${jobPath(ctx.orgSlug, ctx.pipelineSlug, ctx.buildNumber, job.id)}/unblock`, ctx)
      : "";
  const by = personName(job.unblockedBy);
  const teams = job.block?.allowedTeams ?? [];
  return html`<details class="job-details block-step"${waiting ? html` open` : ""}>
<summary>${stateBadge(job.state)} <span class="job-name">${jobTitle(job)}</span> <span class="job-meta"><span class="tag">${job.isInput ? "input" : "block"}</span></span></summary>
<div class="job-body">
${job.block?.prompt ? html`<p class="prompt">${job.block.prompt}</p>` : ""}
${job.unblockedAt ? html`<p>Unblocked${by ? html` by ${by}` : ""} ${timeTag(job.unblockedAt)}</p>` : ""}
${waiting && teams.length > 0 ? html`<p class="muted">Only members of ${teams.join(", ")} may unblock this step.</p>` : ""}
${waiting && !form ? html`<p class="muted">Waiting for someone who may unblock it.</p>` : ""}
${form}
</div>
</details>`;
}

/** A trigger step: the pipeline it triggers and, once made, a link to the build it made. */
function triggerJob(job: Job, ctx: JobRowContext): SafeHtml {
  const made = job.triggeredBuild;
  const link = made?.number
    ? html`<a href="${buildPath(ctx.orgSlug, made.pipelineSlug, made.number)}">${made.pipelineSlug} #${made.number}</a>`
    : html`<span class="muted">no build yet</span>`;
  return html`<div class="job-line">${stateBadge(job.state)} <span class="job-name">${jobTitle(job)}</span>
<span class="job-meta"><span class="tag">trigger</span> ${job.triggerPipeline}${job.triggerAsync ? html` <span class="tag">async</span>` : ""} → ${link}</span></div>`;
}

/** A wait step: a divider; it shows its state once something before it failed. */
function waiterJob(job: Job): SafeHtml {
  const failed = job.state !== "passed" && job.state !== "waiting" && job.state !== "pending";
  return html`<div class="job-line waiter"><span class="job-name">Wait</span>${job.continueOnFailure ? html` <span class="tag">continue on failure</span>` : ""}${failed ? html` ${stateBadge(job.state)}` : ""}</div>`;
}

/**
 * One job's row on the build page, its element's id the job's (so `#<job id>` finds it): the markup the page lists
 * and live updates replace (web/live/). `attempts` are the earlier attempts its retries replaced, oldest first.
 */
export function renderJobRow(job: Job, attempts: readonly Job[], ctx: JobRowContext): SafeHtml {
  const body =
    job.type === "waiter"
      ? waiterJob(job)
      : job.type === "manual"
        ? blockJob(job, ctx)
        : job.type === "trigger"
          ? triggerJob(job, ctx)
          : scriptJob(job, attempts, ctx);
  return html`<li class="job job-${job.type}" id="${job.id}" data-state="${job.state}">${body}</li>`;
}

/** A job's row, from the kept rows when it was rendered before as it is now (keptRowKey). */
function keptRow(job: Job, attempts: readonly Job[], ctx: JobRowContext): SafeHtml {
  const key = keptRowKey(job, ctx);
  if (key === undefined) return renderJobRow(job, attempts, ctx);
  const held = ctx.rows?.get(key);
  if (held !== undefined) return trusted(held);
  const row = renderJobRow(job, attempts, ctx);
  ctx.rows?.set(key, row.value);
  return row;
}

/**
 * A build's jobs in step order, after the form their retry buttons submit (outside the list, which live updates
 * replace).
 */
export function renderJobs(jobs: readonly Job[], ctx: JobRowContext): SafeHtml {
  const ordered = jobsInOrder(jobs);
  if (ordered.length === 0) return html`<p class="empty">This build has no jobs yet.</p>`;
  return html`<ol class="jobs">${ordered.map(({ job, attempts }) => keptRow(job, attempts, ctx))}</ol>`;
}

/** The form every job's Retry button submits (RETRY_FORM): the build page has one, beside its list of jobs. */
export function retryForm(csrf: SafeHtml): SafeHtml {
  return html`<form id="${RETRY_FORM}" method="post" hidden>${csrf}</form>`;
}
