import type { Build, Job } from "@conveyor/proto/builds";
import { durationOf, personName, shortCommit, stateBadge, timeTag } from "../format.js";
import { html, type SafeHtml } from "../html.js";
import { buildPath, orgPath, pipelinePath } from "../paths.js";
import type { BuildPageData } from "./build-data.js";
import { jobAnchorPath } from "./build-paths.js";

/** Jobs that "Retry failed jobs" retries: hard failures of command jobs the person may retry (builds decides again). */
export function failedJobsToRetry(build: Build): Job[] {
  return build.jobs.filter(
    (j) =>
      j.type === "script" &&
      !j.retried &&
      !j.softFailed &&
      (j.state === "failed" || j.state === "timed_out") &&
      j.manualRetryProblem === "",
  );
}

/** Whether the build may still be canceled: it has not finished and no cancel is under way (builds decides again). */
export function isCancelable(build: Build): boolean {
  return !build.finishedAt && build.state !== "canceling" && build.state !== "canceled";
}

/** A form that posts one action of the build, with the person's CSRF field. */
function actionForm(action: string, label: string, csrf: SafeHtml, opts: { confirm?: string; danger?: boolean } = {}) {
  return html`<form method="post" action="${action}"${opts.confirm ? html` data-confirm="${opts.confirm}"` : ""}>${csrf}<button type="submit"${opts.danger ? html` class="danger"` : ""}>${label}</button></form>`;
}

/** The build's actions the person may take now: rebuild, retry failed jobs, cancel. */
function buildActions(data: BuildPageData, csrf: SafeHtml): SafeHtml {
  if (!data.canBuild) return html``;
  const { build, pipeline } = data;
  const base = buildPath(data.orgSlug, pipeline.slug, build.number);
  const actions: SafeHtml[] = [];
  if (pipeline.allowRebuilds && !pipeline.archivedAt) actions.push(actionForm(`${base}/rebuild`, "Rebuild", csrf));
  if (failedJobsToRetry(build).length > 0) actions.push(actionForm(`${base}/retry-failed`, "Retry failed jobs", csrf));
  if (isCancelable(build))
    actions.push(actionForm(`${base}/cancel`, "Cancel build", csrf, { confirm: "Cancel this build?", danger: true }));
  if (actions.length === 0) return html``;
  return html`<div class="actions build-actions">${actions}</div>`;
}

/** A link to another build of the organization (a rebuild's source, a trigger's parent or child). */
function buildLink(orgSlug: string, pipelineSlug: string, number: number, jobId = ""): SafeHtml {
  const href = jobId ? jobAnchorPath(orgSlug, pipelineSlug, number, jobId) : buildPath(orgSlug, pipelineSlug, number);
  return html`<a href="${href}">${pipelineSlug} #${number}</a>`;
}

/** The facts of a build: where its code came from, who made it, when it ran, and the builds it is linked to. */
function buildFacts(data: BuildPageData, now: number): SafeHtml {
  const { build, orgSlug, pipeline } = data;
  const fact = (name: string, value: SafeHtml | string | false | undefined) =>
    value ? html`<dt>${name}</dt><dd>${value}</dd>` : html``;
  const author = build.author && (build.author.name || build.author.email) ? build.author : undefined;
  const creator = personName(build.creator);
  const pr = build.pullRequest;
  const triggered = build.jobs.filter((j) => j.type === "trigger" && j.triggeredBuild && !j.retried);
  const from = build.triggeredFrom;
  return html`<dl class="facts build-facts">
${fact("Branch", html`<code>${build.branch}</code>`)}
${fact("Commit", html`<code title="${build.commit}">${shortCommit(build.commit)}</code>`)}
${fact("Created by", creator)}
${fact("Author", author && author.name !== creator ? personName(author) : "")}
${fact("Source", build.source)}
${fact("Pull request", pr?.id ? html`#${pr.id}${pr.base ? html` into <code>${pr.base}</code>` : ""}` : "")}
${fact("Created", timeTag(build.createdAt))}
${fact("Started", build.startedAt && timeTag(build.startedAt))}
${fact("Finished", build.finishedAt && timeTag(build.finishedAt))}
${fact("Duration", durationOf(build.startedAt, build.finishedAt, now))}
${fact("Canceled because", build.cancelReason)}
${fact("Rebuilt from", build.rebuiltFrom?.number ? buildLink(orgSlug, pipeline.slug, build.rebuiltFrom.number) : "")}
${fact("Triggered from", from?.buildNumber ? buildLink(orgSlug, from.pipelineSlug, from.buildNumber, from.jobId) : "")}
${fact(
  "Triggered",
  triggered.length > 0 &&
    html`<ul class="inline-list">${triggered.map((j) => html`<li>${buildLink(orgSlug, j.triggeredBuild?.pipelineSlug ?? "", j.triggeredBuild?.number ?? 0)}</li>`)}</ul>`,
)}
</dl>`;
}

/** The build's state as its header shows it; the live stream sends it again when it changes (web/live/). */
export function buildStateBadge(build: Pick<Build, "state" | "blocked">): SafeHtml {
  return html`${stateBadge(build.state)}${build.blocked ? html` <span class="tag">waiting at a block step</span>` : ""}`;
}

/** The top of a build's page: where it is, its message and state, its facts and the actions the person may take. */
export function renderBuildHeader(data: BuildPageData, csrf: SafeHtml, now: number): SafeHtml {
  const { build, orgSlug, orgName, pipeline } = data;
  const [title = "", ...rest] = build.message.split("\n");
  const more = rest.join("\n").trim();
  return html`<ol class="breadcrumbs">
  <li><a href="${orgPath(orgSlug)}">${orgName}</a></li>
  <li><a href="${pipelinePath(orgSlug, pipeline.slug)}">${pipeline.name}</a></li>
  <li aria-current="page">Build #${build.number}</li>
</ol>
<div class="page-head build-head">
  <div>
    <h1><span class="build-number">#${build.number}</span> ${title || "(no message)"}</h1>
    <p class="build-state">${buildStateBadge(build)}</p>
  </div>
  ${buildActions(data, csrf)}
</div>
${more ? html`<pre class="build-message-more">${more}</pre>` : ""}
${buildFacts(data, now)}`;
}
