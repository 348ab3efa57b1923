import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { AnnotationsService } from "@conveyor/proto/annotations";
import type { Build } from "../domain/build.js";
import type { Job } from "../domain/job.js";
import type { AnnotationRepository } from "../store/annotation-repository.js";
import { createMemoryAnnotationRepository } from "../store/memory-annotation-repository.js";
import { aBuild, aJob } from "../test-support.js";
import { type AnnotationsDeps, createAnnotationRpcs } from "./annotations-rpc.js";

const builds: Build[] = [aBuild({ id: "b-1", pipelineId: "p-1", number: 1 }), aBuild({ id: "b-2", number: 2 })];
const jobs: Job[] = [
  aJob({ id: "j-1", buildId: "b-1", state: "running" }),
  aJob({ id: "j-2", buildId: "b-1", state: "running" }),
  aJob({ id: "j-9", buildId: "b-2", state: "running" }),
  aJob({ id: "j-done", buildId: "b-1", state: "failed", exitStatus: 1 }),
];

const buildLookup: AnnotationsDeps["builds"] = {
  findBuild: async (pipelineId, number) =>
    builds.find((b) => b.pipelineId === pipelineId && b.number === number) ?? null,
  findBuildById: async (id) => builds.find((b) => b.id === id) ?? null,
  findJob: async (id) => jobs.find((j) => j.id === id) ?? null,
};

/** A client over the service with an in-memory repository and a clock that ticks a second per call. */
function setup(repo: AnnotationRepository = createMemoryAnnotationRepository()) {
  let tick = 0;
  const now = () => new Date(Date.UTC(2026, 2, 1, 10, 0, tick++));
  const service = createAnnotationRpcs({ annotations: repo, builds: buildLookup, now });
  const client = createClient(
    AnnotationsService,
    createRouterTransport(({ service: s }) => s(AnnotationsService, service)),
  );
  const annotate = (fields: Record<string, unknown>) =>
    client.annotateBuild({ buildId: "b-1", jobId: "j-1", body: "hello", ...fields });
  const list = async (fields: Record<string, unknown> = {}) =>
    (await client.listAnnotations({ pipelineId: "p-1", number: 1, ...fields })).annotations;
  return { client, repo, annotate, list };
}

async function failure(call: Promise<unknown>): Promise<{ code: Code; message: string }> {
  try {
    await call;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
  throw new Error("the call succeeded");
}

describe("AnnotationsService", () => {
  it("creates an annotation with Buildkite's defaults and renders its Markdown", async () => {
    const { annotate, list } = setup();
    const { annotation } = await annotate({ body: "**All** green" });
    expect(annotation).toMatchObject({
      buildId: "b-1",
      jobId: "",
      scope: "build",
      context: "default",
      style: "default",
      priority: 3,
      bodyHtml: "<p><strong>All</strong> green</p>\n",
    });
    expect(annotation?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await list()).toEqual([annotation]);
  });

  it("lists highest priority first, then oldest first, and keeps contexts with dots apart", async () => {
    const { annotate, list } = setup();
    await annotate({ context: "a.b", body: "1" });
    await annotate({ context: "a", body: "2", priority: 9 });
    await annotate({ context: "a_b", body: "3" });
    await annotate({ context: "z", body: "4", priority: 1 });
    expect((await list()).map((a) => a.context)).toEqual(["a", "a.b", "a_b", "z"]);
  });

  it("replaces the body of a context, keeping its creation time, style and priority", async () => {
    const { annotate, list } = setup();
    const first = (await annotate({ context: "tests", body: "one", style: "info", priority: 5 })).annotation;
    const second = (await annotate({ context: "tests", body: "two" })).annotation;
    expect(second).toMatchObject({ id: first?.id, style: "info", priority: 5, bodyHtml: "<p>two</p>\n" });
    expect(second?.createdAt).toEqual(first?.createdAt);
    expect(Number(second?.updatedAt?.seconds)).toBeGreaterThan(Number(first?.updatedAt?.seconds));
    expect(await list()).toHaveLength(1);
  });

  it("appends to the body and changes only the style when no body is sent", async () => {
    const { annotate, list } = setup();
    await annotate({ context: "log", body: "line 1\n\n" });
    await annotate({ context: "log", body: "line 2", append: true, style: "warning" });
    await annotate({ context: "log", body: "", style: "error" });
    const [annotation] = await list();
    expect(annotation).toMatchObject({ style: "error", bodyHtml: "<p>line 1</p>\n<p>line 2</p>\n" });
  });

  it("appends from many writers at once without losing one", async () => {
    const { annotate, list } = setup();
    await annotate({ context: "fan-in", body: "start\n" });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => annotate({ context: "fan-in", body: `part-${i}\n`, append: true })),
    );
    const [annotation] = await list();
    for (let i = 0; i < 20; i++) expect(annotation?.bodyHtml).toContain(`part-${i}`);
  });

  it("keeps job-scoped annotations apart from the build's and lists them by job", async () => {
    const { annotate, list } = setup();
    await annotate({ context: "same", body: "build-wide" });
    await annotate({ context: "same", body: "mine", scope: "job" });
    await annotate({ context: "same", body: "theirs", scope: "job", jobId: "j-2" });
    expect((await list()).map((a) => a.bodyHtml)).toEqual(["<p>build-wide</p>\n"]);
    const mine = await list({ jobId: "j-1" });
    expect(mine).toMatchObject([{ scope: "job", jobId: "j-1", bodyHtml: "<p>mine</p>\n" }]);
    expect(await failure(list({ jobId: "j-9" }))).toEqual({ code: Code.NotFound, message: "No job found" });
  });

  it("removes an annotation by context and scope, and says when there is none", async () => {
    const { client, annotate, list } = setup();
    await annotate({ context: "x.y", body: "a" });
    await annotate({ context: "x.y", body: "b", scope: "job" });
    await client.removeAnnotation({ buildId: "b-1", jobId: "j-1", context: "x.y" });
    expect(await list()).toEqual([]);
    expect(await list({ jobId: "j-1" })).toHaveLength(1);
    await client.removeAnnotation({ buildId: "b-1", jobId: "j-1", context: "x.y", scope: "job" });
    expect(await list({ jobId: "j-1" })).toEqual([]);
    expect(await failure(client.removeAnnotation({ buildId: "b-1", jobId: "j-1", context: "x.y" }))).toEqual({
      code: Code.NotFound,
      message: "No annotation found",
    });
  });

  it("removes the default context when none is named", async () => {
    const { client, annotate, list } = setup();
    await annotate({ body: "a" });
    await client.removeAnnotation({ buildId: "b-1", jobId: "j-1", context: "" });
    expect(await list()).toEqual([]);
  });

  it("refuses bad input with a sentence saying why", async () => {
    const { annotate, client } = setup();
    expect(await failure(annotate({ style: "purple" }))).toEqual({
      code: Code.InvalidArgument,
      message: 'Annotation style "purple" is not one of success, info, warning, error',
    });
    expect(await failure(annotate({ body: "" }))).toEqual({
      code: Code.InvalidArgument,
      message: "Annotation body can't be blank",
    });
    expect((await failure(annotate({ context: "c".repeat(101) }))).message).toMatch(/context is too long/);
    expect((await failure(annotate({ priority: 11 }))).message).toMatch(/priority must be/);
    expect((await failure(annotate({ scope: "job", jobId: "" }))).message).toMatch(/needs the job/);
    expect((await failure(annotate({ body: "x".repeat(1024 * 1024 + 1) }))).message).toMatch(/too large/);
    expect((await failure(client.removeAnnotation({ buildId: "b-1", context: "", scope: "team" }))).code).toBe(
      Code.InvalidArgument,
    );
  });

  it("answers NotFound for an unknown build", async () => {
    const { annotate, list } = setup();
    expect(await failure(annotate({ buildId: "nope" }))).toEqual({ code: Code.NotFound, message: "No build found" });
    expect(await failure(list({ number: 7 }))).toEqual({ code: Code.NotFound, message: "No build found" });
  });

  it("refuses a new annotation on a full build, and still updates the ones it holds", async () => {
    const repo = createMemoryAnnotationRepository();
    const { annotate } = setup({ ...repo, count: async () => 1000 });
    expect(await failure(annotate({ context: "more" }))).toEqual({
      code: Code.FailedPrecondition,
      message: "A build can hold at most 1000 annotations: remove some first",
    });
    await setup(repo).annotate({ context: "kept", body: "v1" });
    const updated = await setup({ ...repo, count: async () => 1000 }).annotate({ context: "kept", body: "v2" });
    expect(updated.annotation?.bodyHtml).toBe("<p>v2</p>\n");
  });

  it("pages the list", async () => {
    const { client, annotate } = setup();
    for (let i = 0; i < 5; i++) await annotate({ context: `c${i}`, body: `${i}` });
    const first = await client.listAnnotations({ pipelineId: "p-1", number: 1, perPage: 2 });
    const last = await client.listAnnotations({ pipelineId: "p-1", number: 1, perPage: 2, page: 3 });
    expect(first.annotations.map((a) => a.context)).toEqual(["c0", "c1"]);
    expect(first.hasMore).toBe(true);
    expect(first.totalCount).toBe(5);
    expect(last.annotations.map((a) => a.context)).toEqual(["c4"]);
    expect(last.hasMore).toBe(false);
    expect(last.totalCount).toBe(5);
    // A page far past the end (what REST's largest page and per_page ask for) is empty and still says the total.
    const beyond = await client.listAnnotations({ pipelineId: "p-1", number: 1, perPage: 100, page: 2_147_483_638 });
    expect(beyond).toMatchObject({ annotations: [], hasMore: false, totalCount: 5 });
  });

  it("retries when another process changed the annotation first, and gives up when it never stops", async () => {
    const repo = createMemoryAnnotationRepository();
    await setup(repo).annotate({ context: "busy", body: "v1" });
    let losses = 1;
    const racing: AnnotationRepository = {
      ...repo,
      update: async (...args) => (losses-- > 0 ? null : repo.update(...args)),
    };
    const won = await setup(racing).annotate({ context: "busy", body: "v2" });
    expect(won.annotation?.bodyHtml).toBe("<p>v2</p>\n");
    const hopeless: AnnotationRepository = { ...repo, update: async () => null };
    expect((await failure(setup(hopeless).annotate({ context: "busy", body: "v3" }))).code).toBe(Code.Aborted);
  });

  it("refuses every write through a job that is not running, and through a job of another build", async () => {
    const { client, annotate, list } = setup();
    await annotate({ context: "kept", body: "before" });
    const before = await list();
    for (const call of [
      client.annotateBuild({ buildId: "b-1", jobId: "j-done", context: "kept", body: "after" }),
      client.annotateBuild({ buildId: "b-1", jobId: "j-done", context: "new", body: "after" }),
      client.removeAnnotation({ buildId: "b-1", jobId: "j-done", context: "kept" }),
    ]) {
      expect(await failure(call)).toEqual({
        code: Code.FailedPrecondition,
        message: expect.stringContaining("The job is failed"),
      });
    }
    expect((await failure(client.annotateBuild({ buildId: "b-1", jobId: "j-9", body: "x" }))).code).toBe(Code.NotFound);
    expect((await failure(client.removeAnnotation({ buildId: "b-1", jobId: "j-9", context: "kept" }))).code).toBe(
      Code.NotFound,
    );
    expect(await list()).toEqual(before);
  });

  it("lets a person (REST) annotate a build and a job of it whatever the job's state, never a job of another build", async () => {
    const { client, list } = setup();
    const { annotation } = await client.annotateBuild({ buildId: "b-1", byPerson: true, body: "by hand", priority: 7 });
    expect(annotation).toMatchObject({ scope: "build", jobId: "", priority: 7, context: "default" });
    const onJob = await client.annotateBuild({
      buildId: "b-1",
      jobId: "j-done",
      byPerson: true,
      scope: "job",
      body: "x",
    });
    expect(onJob.annotation).toMatchObject({ scope: "job", jobId: "j-done" });
    expect(await list({ jobId: "j-done" })).toHaveLength(1);
    const other = client.annotateBuild({ buildId: "b-1", jobId: "j-9", byPerson: true, scope: "job", body: "x" });
    expect((await failure(other)).code).toBe(Code.NotFound);
  });

  it("removes an annotation by its id only within its build and, when named, its job", async () => {
    const { client, list } = setup();
    const own = (await client.annotateBuild({ buildId: "b-1", byPerson: true, body: "build's" })).annotation;
    const jobs = (await client.annotateBuild({ buildId: "b-1", jobId: "j-2", byPerson: true, scope: "job", body: "j" }))
      .annotation;
    const byId = (buildId: string, jobId: string, annotationId: string) =>
      client.removeAnnotation({ buildId, jobId, annotationId, context: "ignored", scope: "ignored" });
    expect((await failure(byId("b-2", "", own?.id ?? ""))).code).toBe(Code.NotFound);
    expect((await failure(byId("b-1", "j-2", own?.id ?? ""))).code).toBe(Code.NotFound);
    expect((await failure(byId("b-1", "j-1", jobs?.id ?? ""))).code).toBe(Code.NotFound);
    // A job of another build is named first: "No job found", whatever the annotation.
    expect(await failure(byId("b-1", "j-9", jobs?.id ?? ""))).toMatchObject({
      code: Code.NotFound,
      message: "No job found",
    });
    expect((await failure(byId("b-1", "", "no-such-id"))).code).toBe(Code.NotFound);
    expect(await list()).toHaveLength(1);
    await byId("b-1", "j-2", jobs?.id ?? "");
    await byId("b-1", "", own?.id ?? "");
    expect(await list()).toEqual([]);
    expect(await list({ jobId: "j-2" })).toEqual([]);
    expect((await failure(byId("b-1", "", own?.id ?? ""))).code).toBe(Code.NotFound);
  });
});
