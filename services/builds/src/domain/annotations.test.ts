import {
  ANNOTATION_LIMITS,
  type AnnotateChange,
  type AnnotateRequest,
  type AnnotationContent,
  annotateChange,
  annotatedContent,
  annotationTarget,
  contextProblem,
  roomProblem,
} from "./annotations.js";

const request = (overrides: Partial<AnnotateRequest> = {}): AnnotateRequest => ({
  body: "hello",
  context: "",
  style: "",
  append: false,
  scope: "",
  ...overrides,
});

function change(overrides: Partial<AnnotateRequest> = {}): AnnotateChange {
  const checked = annotateChange(request(overrides));
  if (!checked.ok) throw new Error(checked.problem);
  return checked.value;
}

function problemOf(overrides: Partial<AnnotateRequest>): string {
  const checked = annotateChange(request(overrides));
  if (checked.ok) throw new Error("expected a problem");
  return checked.problem;
}

/** A renderer that shows what it was given. */
const render = (markdown: string) => `<p>${markdown}</p>`;

const existing: AnnotationContent = { style: "info", priority: 7, body: "first", bodyHtml: "<p>first</p>" };

describe("annotationTarget", () => {
  it("files a blank context under default and the build scope by default", () => {
    expect(annotationTarget("", "")).toEqual({ ok: true, value: { context: "default", scope: "build" } });
    expect(annotationTarget("   ", "build")).toEqual({ ok: true, value: { context: "default", scope: "build" } });
  });

  it("keeps contexts as given, dots and spaces included, and takes the job scope in any case", () => {
    expect(annotationTarget("junit.results v2", "JOB")).toEqual({
      ok: true,
      value: { context: "junit.results v2", scope: "job" },
    });
  });

  it("refuses unknown scopes", () => {
    expect(annotationTarget("x", "pipeline")).toEqual({
      ok: false,
      problem: 'Annotation scope "pipeline" is not one of build, job',
    });
  });
});

describe("contextProblem", () => {
  it("allows up to 100 characters, counted as characters rather than bytes", () => {
    expect(contextProblem("a".repeat(100))).toBeNull();
    expect(contextProblem("é".repeat(100))).toBeNull();
    expect(contextProblem("a".repeat(101))).toBe("Annotation context is too long (maximum is 100 characters)");
  });

  it("refuses control characters", () => {
    expect(contextProblem("a\nb")).toBe("Annotation context must not contain control characters");
    expect(contextProblem("a\u0000")).toBe("Annotation context must not contain control characters");
  });
});

describe("annotateChange", () => {
  it("leaves style and priority unset when the call names none, so an existing annotation keeps its own", () => {
    expect(change()).toEqual({
      context: "default",
      scope: "build",
      style: null,
      priority: null,
      body: "hello",
      append: false,
    });
  });

  it("takes the four styles the agent documents, and default, in any case", () => {
    for (const style of ["success", "info", "warning", "error", "default"]) expect(change({ style }).style).toBe(style);
    expect(change({ style: "Warning" }).style).toBe("warning");
  });

  it("refuses other styles with the ones it takes", () => {
    expect(problemOf({ style: "fancy" })).toBe('Annotation style "fancy" is not one of success, info, warning, error');
  });

  it("takes priorities from 1 to 10 and refuses anything else", () => {
    expect(change({ priority: 1 }).priority).toBe(1);
    expect(change({ priority: 10 }).priority).toBe(10);
    for (const priority of [0, 11, -3, 2.5]) {
      expect(problemOf({ priority })).toBe("Annotation priority must be a whole number from 1 to 10");
    }
  });

  it("refuses a body over 1 MiB, counted in UTF-8 bytes", () => {
    expect(change({ body: "a".repeat(ANNOTATION_LIMITS.maxBodyBytes) }).body).toHaveLength(1024 * 1024);
    // 3 bytes each: a third of the characters fill the limit.
    expect(problemOf({ body: "€".repeat(ANNOTATION_LIMITS.maxBodyBytes / 2) })).toBe(
      "Annotation body is too large (1572864 bytes; the maximum is 1048576 bytes)",
    );
  });

  it("reports a bad context or scope before anything else", () => {
    expect(problemOf({ context: "x".repeat(101), style: "fancy" })).toMatch(/context is too long/);
    expect(problemOf({ scope: "org" })).toMatch(/scope "org"/);
  });
});

describe("annotatedContent", () => {
  it("creates an annotation with the default style and priority 3", () => {
    expect(annotatedContent(null, change({ body: "**hi**" }), render)).toEqual({
      ok: true,
      value: { style: "default", priority: 3, body: "**hi**", bodyHtml: "<p>**hi**</p>" },
    });
  });

  it("creates one with the style and priority asked for", () => {
    const made = annotatedContent(null, change({ style: "error", priority: 9 }), render);
    expect(made).toMatchObject({ ok: true, value: { style: "error", priority: 9 } });
  });

  it("refuses to create an annotation without a body", () => {
    expect(annotatedContent(null, change({ body: "" }), render)).toEqual({
      ok: false,
      problem: "Annotation body can't be blank",
    });
    expect(annotatedContent(null, change({ body: " \n " }), render)).toMatchObject({ ok: false });
  });

  it("replaces the body of an existing annotation, keeping its style and priority unless asked", () => {
    expect(annotatedContent(existing, change({ body: "second" }), render)).toEqual({
      ok: true,
      value: { style: "info", priority: 7, body: "second", bodyHtml: "<p>second</p>" },
    });
    expect(annotatedContent(existing, change({ body: "second", style: "success", priority: 2 }), render)).toEqual({
      ok: true,
      value: { style: "success", priority: 2, body: "second", bodyHtml: "<p>second</p>" },
    });
  });

  it("appends to the existing body and renders the whole of it", () => {
    expect(annotatedContent(existing, change({ body: "\nmore", append: true }), render)).toEqual({
      ok: true,
      value: { style: "info", priority: 7, body: "first\nmore", bodyHtml: "<p>first\nmore</p>" },
    });
  });

  it("appending to nothing creates the annotation", () => {
    expect(annotatedContent(null, change({ body: "start", append: true }), render)).toMatchObject({
      ok: true,
      value: { body: "start" },
    });
  });

  it("changes only the style when no body is sent, without rendering again", () => {
    const renderNothing = () => {
      throw new Error("rendered");
    };
    expect(annotatedContent(existing, change({ body: "", style: "warning" }), renderNothing)).toEqual({
      ok: true,
      value: { ...existing, style: "warning" },
    });
    // Only the content: a stored annotation's other fields (its job, its id) never ride along into an update.
    const stored = { ...existing, id: "a-1", jobId: null, context: "c", version: 4 };
    expect(annotatedContent(stored, change({ body: "", style: "warning" }), renderNothing)).toEqual({
      ok: true,
      value: { ...existing, style: "warning" },
    });
  });

  it("keeps an appended body within 1 MiB", () => {
    const half = "a".repeat(ANNOTATION_LIMITS.maxBodyBytes / 2);
    const full = { ...existing, body: half };
    expect(annotatedContent(full, change({ body: half, append: true }), render)).toMatchObject({ ok: true });
    expect(annotatedContent(full, change({ body: `${half}b`, append: true }), render)).toEqual({
      ok: false,
      problem: "Annotation body is too large (1048577 bytes; the maximum is 1048576 bytes)",
    });
  });

  it("refuses a body whose HTML outgrows its own bound", () => {
    const bloated = () => "x".repeat(ANNOTATION_LIMITS.maxHtmlBytes + 1);
    expect(annotatedContent(null, change({ body: "| a |" }), bloated)).toEqual({
      ok: false,
      problem: "Annotation body renders to more than 4194304 bytes of HTML: make it shorter",
    });
  });
});

describe("roomProblem", () => {
  it("lets a build hold up to 1000 annotations", () => {
    expect(roomProblem(0)).toBeNull();
    expect(roomProblem(ANNOTATION_LIMITS.maxPerBuild - 1)).toBeNull();
    expect(roomProblem(ANNOTATION_LIMITS.maxPerBuild)).toBe(
      "A build can hold at most 1000 annotations: remove some first",
    );
  });
});
