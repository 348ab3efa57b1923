/**
 * Build annotations as `buildkite-agent annotate` and `annotation remove` make them
 * (docs/compatibility.md#agent-endpoints): one annotation per context of a build (or of a job, for job-scoped ones),
 * whose Markdown body is replaced, appended to, or kept while only its style or priority changes. Every input is
 * bounded, and an appended body stays bounded too. Pure: rendering the Markdown is handed in.
 */

/** Bounds of annotations. */
export const ANNOTATION_LIMITS = {
  /** Buildkite's limit on one annotation's body, appended parts included (UTF-8 bytes). */
  maxBodyBytes: 1024 * 1024,
  /** Markdown can render to more bytes than it has (tables, lists): the stored HTML is bounded on its own. */
  maxHtmlBytes: 4 * 1024 * 1024,
  /** The agent's documented limit on a context (characters). */
  maxContextLength: 100,
  /** Annotations one build may hold, its jobs' annotations included. */
  maxPerBuild: 1000,
} as const;

export const ANNOTATION_STYLES = ["default", "success", "info", "warning", "error"] as const;
export type AnnotationStyle = (typeof ANNOTATION_STYLES)[number];

export const ANNOTATION_SCOPES = ["build", "job"] as const;
export type AnnotationScope = (typeof ANNOTATION_SCOPES)[number];

export const DEFAULT_CONTEXT = "default";
export const DEFAULT_PRIORITY = 3;
const MIN_PRIORITY = 1;
const MAX_PRIORITY = 10;

/** A stored annotation. */
export interface Annotation {
  id: string;
  buildId: string;
  /** The job of a job-scoped annotation; null for the build's own. */
  jobId: string | null;
  scope: AnnotationScope;
  context: string;
  style: AnnotationStyle;
  priority: number;
  /** The Markdown, kept so that appending renders the whole body again. */
  body: string;
  bodyHtml: string;
  createdAt: Date;
  updatedAt: Date;
  /** Bumped by every change: updates are compare-and-set on it. */
  version: number;
}

/** What an annotate call asks for, as the agent sends it (empty strings for what it left out). */
export interface AnnotateRequest {
  body: string;
  context: string;
  style: string;
  append: boolean;
  priority?: number | undefined;
  scope: string;
}

/** A checked annotate call: null style or priority keeps the existing annotation's (or takes the default). */
export interface AnnotateChange {
  context: string;
  scope: AnnotationScope;
  style: AnnotationStyle | null;
  priority: number | null;
  body: string;
  append: boolean;
}

/** The outcome of a check: the value, or why it cannot be done (a sentence for the caller). */
export type Checked<T> = { ok: true; value: T } | { ok: false; problem: string };

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const fail = <T>(problem: string): Checked<T> => ({ ok: false, problem });

/** The context an annotation is filed under: blank means "default". */
export function contextProblem(context: string): string | null {
  if ([...context].length > ANNOTATION_LIMITS.maxContextLength)
    return `Annotation context is too long (maximum is ${ANNOTATION_LIMITS.maxContextLength} characters)`;
  // Control characters would end up in URLs, logs and the REST answers.
  if (/\p{Cc}/u.test(context)) return "Annotation context must not contain control characters";
  return null;
}

/** A checked context and scope, as both annotate and remove name an annotation. */
export function annotationTarget(context: string, scope: string): Checked<{ context: string; scope: AnnotationScope }> {
  const name = context.trim() === "" ? DEFAULT_CONTEXT : context;
  const problem = contextProblem(name);
  if (problem) return fail(problem);
  const normalizedScope = scope.trim().toLowerCase() || "build";
  if (!(ANNOTATION_SCOPES as readonly string[]).includes(normalizedScope))
    return fail(`Annotation scope "${scope}" is not one of ${ANNOTATION_SCOPES.join(", ")}`);
  return ok({ context: name, scope: normalizedScope as AnnotationScope });
}

/** Checks an annotate call: context, scope, style, priority and the size of the body sent. */
export function annotateChange(req: AnnotateRequest): Checked<AnnotateChange> {
  const target = annotationTarget(req.context, req.scope);
  if (!target.ok) return target;
  let style: AnnotationStyle | null = null;
  if (req.style.trim() !== "") {
    const wanted = req.style.trim().toLowerCase();
    if (!(ANNOTATION_STYLES as readonly string[]).includes(wanted))
      return fail(`Annotation style "${req.style}" is not one of success, info, warning, error`);
    style = wanted as AnnotationStyle;
  }
  const priority = req.priority ?? null;
  if (priority !== null && (!Number.isInteger(priority) || priority < MIN_PRIORITY || priority > MAX_PRIORITY))
    return fail(`Annotation priority must be a whole number from ${MIN_PRIORITY} to ${MAX_PRIORITY}`);
  const bytes = Buffer.byteLength(req.body);
  if (bytes > ANNOTATION_LIMITS.maxBodyBytes) return fail(tooLarge(bytes));
  return ok({ ...target.value, style, priority, body: req.body, append: req.append });
}

function tooLarge(bytes: number): string {
  return `Annotation body is too large (${bytes} bytes; the maximum is ${ANNOTATION_LIMITS.maxBodyBytes} bytes)`;
}

/** Whether a build holding `count` annotations may take one more. */
export function roomProblem(count: number): string | null {
  return count >= ANNOTATION_LIMITS.maxPerBuild
    ? `A build can hold at most ${ANNOTATION_LIMITS.maxPerBuild} annotations: remove some first`
    : null;
}

/** The new fields of an annotation after a change. */
export type AnnotationContent = Pick<Annotation, "style" | "priority" | "body" | "bodyHtml">;

/**
 * What an annotation holds after a change: a new one, or the existing one with its body replaced (a body was sent),
 * appended to (`append`), or kept (no body: only the style or priority changes). A new annotation needs a body; the
 * whole body, appended parts included, stays within the limit, and so does its HTML.
 */
export function annotatedContent(
  existing: AnnotationContent | null,
  change: AnnotateChange,
  render: (markdown: string) => string,
): Checked<AnnotationContent> {
  if (!existing && change.body.trim() === "") return fail("Annotation body can't be blank");
  const style = change.style ?? existing?.style ?? "default";
  const priority = change.priority ?? existing?.priority ?? DEFAULT_PRIORITY;
  if (existing && change.body === "") return ok({ style, priority, body: existing.body, bodyHtml: existing.bodyHtml });
  const body = existing && change.append ? existing.body + change.body : change.body;
  const bytes = Buffer.byteLength(body);
  if (bytes > ANNOTATION_LIMITS.maxBodyBytes) return fail(tooLarge(bytes));
  const bodyHtml = render(body);
  if (Buffer.byteLength(bodyHtml) > ANNOTATION_LIMITS.maxHtmlBytes)
    return fail(
      `Annotation body renders to more than ${ANNOTATION_LIMITS.maxHtmlBytes} bytes of HTML: make it shorter`,
    );
  return ok({ style, priority, body, bodyHtml });
}
