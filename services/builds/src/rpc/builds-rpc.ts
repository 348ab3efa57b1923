import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { BuildsService } from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { failedPrecondition, invalidFields, notFound, pageWindow } from "@conveyor/runtime";
import type { BuildsContext } from "../builds-context.js";
import { type BuildCreation, checkPipeline } from "../creation/build-creation.js";
import type { CurrentPipelines } from "../creation/current-pipelines.js";
import { buildInputProblems } from "../domain/build-input.js";
import { FINISHED_FILTER_STATES } from "../domain/state-sets.js";
import { BUILD_STATES, type BuildState } from "../domain/types.js";
import { requireRunningJob } from "../jobs/running-job.js";
import type { BuildCancel } from "../lifecycle/build-cancel.js";
import type { BuildListFilter } from "../store/build-list-query.js";
import { buildAnswer, NO_JOBS, pageVersion, visibleJobs } from "./build-answer.js";
import { buildMessage, userSnapshot } from "./build-message.js";

type BuildRpcs = Pick<
  ServiceImpl<typeof BuildsService>,
  "createBuild" | "getBuild" | "listBuilds" | "cancelBuild" | "rebuildBuild"
>;

/** The RPCs on builds: create, get, list, cancel and rebuild. */
export function createBuildRpcs(
  ctx: BuildsContext,
  parts: {
    creation: BuildCreation;
    cancel: BuildCancel;
    /**
     * The pipelines builds are created for, as they hold now (current-pipelines.ts). The caller's copy may be a
     * cache's, up to its TTL old: a build admitted on it could land in a pipeline archived (or deleted) meanwhile.
     */
    pipelines: CurrentPipelines;
  },
): BuildRpcs {
  const { repo, withLock } = ctx;
  const { creation, cancel } = parts;
  /**
   * The request's pipeline as it is now: the caller's copy, or the pipeline it names by id (a create then carries no
   * steps). Undefined when the request names none.
   */
  const current = async (req: {
    pipeline?: Pipeline;
    organizationId?: string;
    pipelineId?: string;
  }): Promise<Pipeline | undefined> => {
    const now = req.pipeline
      ? await parts.pipelines.current(req.pipeline)
      : req.pipelineId
        ? await parts.pipelines.byId(req.organizationId ?? "", req.pipelineId)
        : undefined;
    if (now === null) throw notFound("pipeline");
    return now;
  };

  const requireBuild = async (pipelineId: string, number: number) => {
    const build = pipelineId !== "" && number > 0 ? await repo.findBuild(pipelineId, number) : null;
    if (!build) throw notFound("build");
    return build;
  };

  return {
    async createBuild(req) {
      const problems = buildInputProblems(req);
      if (problems.length > 0) throw invalidFields(problems);
      const commit = req.commit.trim();
      const branch = req.branch.trim();
      const at = ctx.now();
      const pipeline = checkPipeline(await current(req), branch, req.ignorePipelineBranchFilters);
      const creator = userSnapshot(req.creator);
      const author =
        req.author && (req.author.name !== "" || req.author.email !== "")
          ? { name: req.author.name, email: req.author.email }
          : creator && { name: creator.name, email: creator.email };
      const created = await creation.create({
        pipeline,
        organizationSlug: req.organizationSlug,
        creator,
        commit,
        branch,
        message: req.message,
        author,
        cleanCheckout: req.cleanCheckout,
        env: req.env,
        metaData: req.metaData,
        pullRequest:
          req.pullRequestId !== ""
            ? {
                id: req.pullRequestId,
                base: req.pullRequestBaseBranch,
                repository: req.pullRequestRepository,
                labels: req.pullRequestLabels,
                draft: null,
                fork: null,
              }
            : null,
        source: req.source || "api",
        rebuiltFrom: null,
        at,
      });
      return { build: buildMessage(created.build, created.jobs) };
    },

    async getBuild(req) {
      const found =
        req.pipelineId !== "" && req.number > 0 ? await ctx.reads.buildWithJobs(req.pipelineId, req.number) : null;
      if (!found) throw notFound("build");
      const shown = buildAnswer(found.build, found.jobs, req.includeRetriedJobs);
      if (req.ifNoneMatch !== "" && req.ifNoneMatch === shown.version) {
        return { version: shown.version, notModified: true };
      }
      return { build: shown.message, version: shown.version };
    },

    async listBuilds(req) {
      if (req.organizationIds.length === 0 && req.pipelineIds.length === 0) return { builds: [], hasMore: false };
      const states = new Set<BuildState>();
      for (const s of req.states) {
        if (s === "finished") for (const f of FINISHED_FILTER_STATES) states.add(f);
        else if ((BUILD_STATES as readonly string[]).includes(s)) states.add(s as BuildState);
        else throw invalidFields([{ field: "state", code: `"${s}" is not a build state` }]);
      }
      const filter: BuildListFilter = {
        organizationIds: req.organizationIds,
        pipelineIds: req.pipelineIds,
        ...(req.pipelineId ? { pipelineId: req.pipelineId } : {}),
        branches: req.branches,
        commits: req.commits,
        ...(req.createdFrom ? { createdFrom: timestampDate(req.createdFrom) } : {}),
        ...(req.createdTo ? { createdTo: timestampDate(req.createdTo) } : {}),
        ...(req.creatorId ? { creatorId: req.creatorId } : {}),
        ...(req.finishedFrom ? { finishedFrom: timestampDate(req.finishedFrom) } : {}),
        metaPairs: Object.entries(req.metaData).map(([k, v]) => `${k}=${v}`),
        states: [...states],
      };
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      // One more than a page tells whether there is a next one; its jobs are not needed.
      const page = await ctx.reads.page(filter, skip, perPage + 1, !req.excludeJobs);
      const hasMore = page.builds.length > perPage;
      const shown = page.builds
        .slice(0, perPage)
        .map((b) =>
          buildAnswer(b, req.excludeJobs ? NO_JOBS : (page.jobs.get(b.id) ?? NO_JOBS), req.includeRetriedJobs),
        );
      const version = pageVersion(
        shown.map((b) => b.version),
        hasMore,
      );
      if (req.ifNoneMatch !== "" && req.ifNoneMatch === version) return { hasMore, version, notModified: true };
      return { builds: shown.map((b) => b.message), hasMore, version };
    },

    async cancelBuild(req) {
      const found = await requireBuild(req.pipelineId, req.number);
      // A job canceling its own build (`buildkite-agent build cancel`) reaches it only while it runs.
      if (req.jobId !== "") await requireRunningJob(ctx.repo, req.jobId, found.id);
      const result = await withLock(found.id, () => cancel.cancelOnRequest(req.pipelineId, req.number, req.reason));
      return { build: buildMessage(result.build, visibleJobs(result.jobs, false)) };
    },

    async rebuildBuild(req) {
      const pipeline = await current({ pipeline: req.pipeline });
      if (!pipeline) throw invalidFields([{ field: "pipeline", code: "is required" }]);
      const original = await requireBuild(pipeline.id, req.number);
      if (!pipeline.allowRebuilds) throw failedPrecondition("Rebuilds are not allowed for this pipeline.");
      if (pipeline.archivedAt) throw failedPrecondition("Pipeline is archived: unarchive it before rebuilding.");
      const created = await creation.create({
        pipeline,
        organizationSlug: req.organizationSlug,
        creator: userSnapshot(req.creator) ?? original.creator,
        commit: original.commit,
        branch: original.branch,
        message: original.message,
        author: original.author,
        cleanCheckout: original.cleanCheckout,
        env: original.env,
        metaData: original.metaData,
        pullRequest: original.pullRequest,
        // A rebuild replays what the original captured (its tag too), but is no webhook build itself.
        tag: original.tag,
        source: "api",
        rebuiltFrom: { id: original.id, number: original.number },
      });
      return { build: buildMessage(created.build, created.jobs) };
    },
  };
}
