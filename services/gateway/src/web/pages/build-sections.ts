import type { Annotation } from "@conveyor/proto/annotations";
import type { Artifact } from "@conveyor/proto/artifacts";
import type { Job } from "@conveyor/proto/builds";
import { type HtmlValue, html, type SafeHtml, trusted } from "../html.js";
import { buildPath } from "../paths.js";
import { type AnnotationsPage, type BuildPageData, PAGE_ITEMS } from "./build-data.js";
import { jobTitle } from "./build-jobs.js";
import { jobPath } from "./build-paths.js";

/** Annotation styles in the order Buildkite stacks them when priorities tie. */
const STYLES = ["error", "warning", "info", "success", "default"];

/** The pages of annotations a page may ask for: a build holds at most 1,000 (docs/limits.md), 100 a page. */
export const ANNOTATION_PAGES = 10;

/** Where a list of annotations sits: its heading's id prefix and words, and the address of another of its pages. */
export interface AnnotationsPlace {
  id: string;
  title: string;
  pageHref(page: number): string;
}

/** Which of the list's annotations a page shows and how many more follow, with links to the other pages. */
function annotationsPager(list: AnnotationsPage, place: AnnotationsPlace): HtmlValue {
  if (list.total <= PAGE_ITEMS && list.page === 1) return "";
  const first = (list.page - 1) * PAGE_ITEMS + 1;
  const last = first + list.annotations.length - 1;
  const more = list.total - Math.max(last, first - 1);
  return html`<nav class="pager" aria-label="${place.title} pages">
${list.annotations.length > 0 ? html`<span>Showing ${first}–${last} of ${list.total}.</span>` : ""}
${list.page > 1 ? html`<a href="${place.pageHref(list.page - 1)}">Previous ${PAGE_ITEMS}</a>` : ""}
${more > 0 && list.page < ANNOTATION_PAGES ? html`<a href="${place.pageHref(list.page + 1)}">${more} more</a>` : ""}
</nav>`;
}

/**
 * A page of annotations (a build's own, or a job's), grouped by style (the groups in the order of their
 * highest-priority annotation), each under its context, with "N more" and a link to the next 100 when there are more.
 * The body is the HTML the builds service stored: rendered from Markdown and restricted to a safe allow-list there
 * (services/builds/src/domain/annotation-html.ts), so it is inserted as it is.
 */
export function renderAnnotations(list: AnnotationsPage, place: AnnotationsPlace): SafeHtml {
  const { annotations } = list;
  if (annotations.length === 0 && list.page === 1) return html``;
  const groups = new Map<string, Annotation[]>();
  // The service lists them highest priority first; a style's group sits where its first annotation does.
  const styleOf = (a: Annotation) => (STYLES.includes(a.style) ? a.style : "default");
  for (const a of annotations) groups.set(styleOf(a), [...(groups.get(styleOf(a)) ?? []), a]);
  return html`<section class="annotations" aria-labelledby="${place.id}-title">
<h2 id="${place.id}-title">${place.title}</h2>
${[...groups].map(
  ([style, list]) => html`<div class="annotation-group annotation-${style}">
${list.map(
  (a) => html`<article class="annotation annotation-${style}" data-context="${a.context}">
<p class="annotation-context">${a.context}</p>
<div class="annotation-body">${trusted(a.bodyHtml)}</div>
</article>`,
)}
</div>`,
)}
${annotationsPager(list, place)}
</section>`;
}

/** A size in bytes as people read it. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** Where an artifact of a job is downloaded from the pages (build-artifacts.ts checks the person's access). */
export function artifactDownloadPath(data: Pick<BuildPageData, "orgSlug" | "pipeline" | "build">, a: Artifact) {
  return `${jobPath(data.orgSlug, data.pipeline.slug, data.build.number, a.jobId)}/artifacts/${encodeURIComponent(a.id)}`;
}

/** One page of a build's artifacts: path, size, the job that uploaded it, and a download link once uploaded. */
export function renderArtifacts(data: BuildPageData): SafeHtml {
  if (data.artifactsTotal === 0) return html``;
  const jobs = new Map<string, Job>(data.build.jobs.map((j) => [j.id, j]));
  const base = buildPath(data.orgSlug, data.pipeline.slug, data.build.number);
  const pages = Math.ceil(data.artifactsTotal / PAGE_ITEMS);
  const pageLink = (page: number, text: string) =>
    html`<a href="${base}?artifacts_page=${page}#artifacts-title">${text}</a>`;
  return html`<section class="artifacts" aria-labelledby="artifacts-title">
<h2 id="artifacts-title">Artifacts <span class="muted">(${data.artifactsTotal})</span></h2>
<table>
<thead><tr><th scope="col">Path</th><th scope="col">Size</th><th scope="col">Job</th><th scope="col">State</th></tr></thead>
<tbody>
${data.artifacts.map((a) => {
  const job = jobs.get(a.jobId);
  const path =
    a.state === "finished"
      ? html`<a href="${artifactDownloadPath(data, a)}" download>${a.path}</a>`
      : html`<span>${a.path}</span>`;
  return html`<tr><td class="mono">${path}</td><td>${formatBytes(Number(a.fileSize))}</td>
<td>${job ? html`<a href="${base}#${a.jobId}">${jobTitle(job)}</a>` : ""}</td><td>${a.state}</td></tr>`;
})}
</tbody>
</table>
${
  pages > 1
    ? html`<nav class="pager" aria-label="Artifact pages">${data.artifactsPage > 1 ? pageLink(data.artifactsPage - 1, "Previous") : ""}<span>Page ${data.artifactsPage} of ${pages}</span>${data.artifactsPage < pages ? pageLink(data.artifactsPage + 1, "Next") : ""}</nav>`
    : ""
}
</section>`;
}

/** The build's meta-data, by key. */
export function renderMetaData(metaData: Record<string, string>): SafeHtml {
  const keys = Object.keys(metaData).sort();
  if (keys.length === 0) return html``;
  return html`<section class="meta-data" aria-labelledby="meta-data-title">
<h2 id="meta-data-title">Meta-data</h2>
<table><thead><tr><th scope="col">Key</th><th scope="col">Value</th></tr></thead><tbody>
${keys.map((k) => html`<tr><td class="mono">${k}</td><td><pre class="value">${metaData[k]}</pre></td></tr>`)}
</tbody></table>
</section>`;
}
