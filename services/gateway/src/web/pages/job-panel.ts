import { html, type SafeHtml } from "../html.js";
import { createAnsiToHtml } from "../log/ansi-html.js";
import { renderLogHtml } from "../log/log-html.js";
import { type JobLogRef, readLogTail, TAIL_BYTES } from "../log/log-reader.js";
import type { WebDeps } from "../web-deps.js";
import { readAnnotations } from "./build-data.js";
import { formatBytes, renderAnnotations } from "./build-sections.js";

/** Which job's panel, and what the person may see of it. */
export interface JobPanelTarget {
  ref: JobLogRef;
  /** The job's log page (build-paths.ts's jobLogPath): "show all" and the raw log are beside it. */
  logPath: string;
  /** Whether the person may read the job's environment (build-data.ts's mayReadEnv). */
  canReadEnv: boolean;
  /** The page of the job's job-scoped annotations to show (of 100). */
  annotationsPage: number;
}

/** A job's environment as a table, by name. */
function envTable(env: Record<string, string>): SafeHtml {
  const names = Object.keys(env).sort();
  return html`<details class="job-env"><summary>Environment (${names.length})</summary>
<table><thead><tr><th scope="col">Name</th><th scope="col">Value</th></tr></thead><tbody>
${names.map((n) => html`<tr><td class="mono">${n}</td><td><pre class="value">${env[n]}</pre></td></tr>`)}
</tbody></table></details>`;
}

/**
 * A job's panel, shown when its row is opened: its job-scoped annotations (100 a page, the others a link away), its
 * log's tail (the last 2 MiB, read from that offset: never the whole log), links to show all of it and to download
 * it raw, and its environment for people who may read it. One annotations read, one log read and at most one
 * environment read, together.
 */
export async function renderJobPanel(deps: Pick<WebDeps, "clients">, target: JobPanelTarget): Promise<SafeHtml> {
  const { builds } = deps.clients;
  const [annotations, tail, env] = await Promise.all([
    readAnnotations(deps, target.ref, target.annotationsPage),
    readLogTail((req, opts) => builds.streamJobLog(req, opts), target.ref),
    target.canReadEnv ? builds.getJobEnv(target.ref).then((res) => res.env) : Promise.resolve(null),
  ]);
  const jobAnnotations = renderAnnotations(annotations, {
    id: `annotations-${target.ref.jobId}`,
    title: "Job annotations",
    pageHref: (page) => `${target.logPath}?annotations_page=${page}#annotations-${target.ref.jobId}-title`,
  });
  const size = Number(tail.info.size);
  const lines = tail.lines;
  const body = tail.info.deleted
    ? html`<p class="notice">This job's log was deleted.</p>`
    : lines.length === 0
      ? html`<p class="empty">No log output.</p>`
      : html`<div class="log" id="log-${target.ref.jobId}" data-job="${target.ref.jobId}" data-end="${tail.end}" tabindex="0" role="region" aria-label="Log">${renderLogHtml(lines, { ansi: createAnsiToHtml(), ...(tail.cut ? {} : { firstLineNumber: 1 }) })}</div>`;
  return html`<div class="job-panel">
${jobAnnotations}
<p class="log-bar">
${size > 0 ? html`<span class="muted">${formatBytes(size)}</span>` : ""}
${tail.cut ? html`<a href="${target.logPath}?all=1">Show the whole log</a>` : ""}
${size > 0 ? html`<a href="${target.logPath}.txt" download>Download</a>` : ""}
</p>
${tail.cut ? html`<p class="notice">Showing the last ${formatBytes(TAIL_BYTES)} of the log.</p>` : ""}
${body}
${env ? envTable(env) : ""}
</div>`;
}
