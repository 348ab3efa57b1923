import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AnnotationSchema, AnnotationsService } from "@conveyor/proto/annotations";
import { createKeyedLock, failedPrecondition, newId, notFound, pageWindow, toTimestamp } from "@conveyor/runtime";
import { renderAnnotationHtml } from "../domain/annotation-html.js";
import {
  type AnnotateChange,
  type Annotation,
  annotateChange,
  annotatedContent,
  annotationTarget,
  roomProblem,
} from "../domain/annotations.js";
import { requireRunningJob } from "../jobs/running-job.js";
import type { AnnotationOwner, AnnotationRepository } from "../store/annotation-repository.js";
import type { BuildRepository } from "../store/build-repository.js";

export interface AnnotationsDeps {
  annotations: AnnotationRepository;
  /** Where builds and jobs are looked up (read only). */
  builds: Pick<BuildRepository, "findBuild" | "findBuildById" | "findJob">;
  now?: () => Date;
  /** Markdown to safe HTML; renderAnnotationHtml unless a test hands in another. */
  render?: (markdown: string) => string;
}

/** How often an annotate retries when other writers keep changing the same annotation (other processes). */
const MAX_ATTEMPTS = 10;

/** Bad input, said in a sentence: the gateway answers 422 with it as the message, which the agent prints. */
function invalid(problem: string): ConnectError {
  return new ConnectError(problem, Code.InvalidArgument);
}

/** A stored annotation as the Annotation message (never its Markdown). */
export function annotationMessage(a: Annotation): MessageInitShape<typeof AnnotationSchema> {
  return {
    id: a.id,
    buildId: a.buildId,
    jobId: a.jobId ?? "",
    scope: a.scope,
    context: a.context,
    style: a.style,
    priority: a.priority,
    bodyHtml: a.bodyHtml,
    createdAt: toTimestamp(a.createdAt),
    updatedAt: toTimestamp(a.updatedAt),
  };
}

/** The annotation RPCs (all of AnnotationsService): annotate, remove and list, over the annotations and the builds they belong to. */
export function createAnnotationRpcs(deps: AnnotationsDeps): ServiceImpl<typeof AnnotationsService> {
  const { annotations, builds } = deps;
  const now = deps.now ?? (() => new Date());
  const render = deps.render ?? renderAnnotationHtml;
  // One writer per annotation at a time in this process; the version check guards against other processes.
  const withLock = createKeyedLock();

  /** The annotation a change lands on, written: created, replaced, appended to or restyled. */
  const write = async (buildId: string, owner: AnnotationOwner, change: AnnotateChange): Promise<Annotation> => {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const existing = await annotations.find(buildId, owner, change.context);
      if (!existing) {
        const room = roomProblem(await annotations.count(buildId));
        if (room) throw failedPrecondition(room);
      }
      const content = annotatedContent(existing, change, render);
      if (!content.ok) throw invalid(content.problem);
      const at = now();
      if (existing) {
        const updated = await annotations.update(existing.id, existing.version, content.value, at);
        if (updated) return updated;
        continue;
      }
      const created: Annotation = {
        id: newId(),
        buildId,
        jobId: owner,
        scope: change.scope,
        context: change.context,
        ...content.value,
        createdAt: at,
        updatedAt: at,
        version: 1,
      };
      if (await annotations.insert(created)) return created;
    }
    throw new ConnectError("the annotation kept changing while it was written: try again", Code.Aborted);
  };

  /** A person names a job of the build (REST): any state, but of that build. */
  const requireJobOf = async (jobId: string, buildId: string) => {
    const job = await builds.findJob(jobId);
    if (job?.buildId !== buildId) throw notFound("job");
  };

  /** REST's removal by UUID: an annotation of the build, and of the job when one is named (its job-scoped ones). */
  const removeById = async (buildId: string, jobId: string, id: string) => {
    if (jobId !== "") await requireJobOf(jobId, buildId);
    const found = await annotations.findById(id);
    if (!found || found.buildId !== buildId || (jobId !== "" && found.jobId !== jobId)) throw notFound("annotation");
    const key = `${buildId}/${found.jobId ?? ""}/${found.context}`;
    const removed = await withLock(key, () => annotations.remove(buildId, found.jobId, found.context));
    if (!removed) throw notFound("annotation");
    return {};
  };

  return {
    async annotateBuild(req) {
      const change = annotateChange({
        body: req.body,
        context: req.context,
        style: req.style,
        append: req.append,
        priority: req.priority,
        scope: req.scope,
      });
      if (!change.ok) throw invalid(change.problem);
      if (change.value.scope === "job" && req.jobId === "")
        throw invalid("A job-scoped annotation needs the job it belongs to");
      const build = req.buildId === "" ? null : await builds.findBuildById(req.buildId);
      if (!build) throw notFound("build");
      if (req.jobId !== "" && req.byPerson) await requireJobOf(req.jobId, build.id);
      else if (req.jobId !== "") await requireRunningJob(builds, req.jobId, build.id);
      const owner = change.value.scope === "job" ? req.jobId : null;
      const annotation = await withLock(`${build.id}/${owner ?? ""}/${change.value.context}`, () =>
        write(build.id, owner, change.value),
      );
      return { annotation: annotationMessage(annotation) };
    },

    async removeAnnotation(req) {
      if (req.annotationId !== "") return removeById(req.buildId, req.jobId, req.annotationId);
      const target = annotationTarget(req.context, req.scope);
      if (!target.ok) throw invalid(target.problem);
      if (target.value.scope === "job" && req.jobId === "")
        throw invalid("A job-scoped annotation needs the job it belongs to");
      if (req.jobId !== "") await requireRunningJob(builds, req.jobId, req.buildId);
      const owner = target.value.scope === "job" ? req.jobId : null;
      const key = `${req.buildId}/${owner ?? ""}/${target.value.context}`;
      const removed = await withLock(key, () => annotations.remove(req.buildId, owner, target.value.context));
      if (!removed) throw notFound("annotation");
      return {};
    },

    async listAnnotations(req) {
      const build = req.pipelineId !== "" && req.number > 0 ? await builds.findBuild(req.pipelineId, req.number) : null;
      if (!build) throw notFound("build");
      if (req.jobId !== "") {
        const job = await builds.findJob(req.jobId);
        if (job?.buildId !== build.id) throw notFound("job");
      }
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const ownerOf = req.jobId === "" ? null : req.jobId;
      const page = await annotations.list(build.id, ownerOf, skip, perPage + 1);
      const hasMore = page.length > perPage;
      // Counted when more follow or the page is past the end (a build holds at most 1,000; counted from the owner's
      // index); else it is known. Past the end, skip may be far beyond what total_count (int32) holds.
      const totalCount =
        hasMore || page.length === 0 ? await annotations.countOf(build.id, ownerOf) : skip + page.length;
      return { annotations: page.slice(0, perPage).map(annotationMessage), hasMore, totalCount };
    },
  };
}
