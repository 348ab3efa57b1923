import { Code, ConnectError } from "@connectrpc/connect";
import { matchesBranchFilter } from "@conveyor/ci-rules";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { failedPrecondition, invalidFields, newId, SUBJECTS, stepsFromMessages } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import {
  type Build,
  type BuildPullRequest,
  conditionContext,
  type PipelineSnapshot,
  type TriggeredFrom,
  type UserSnapshot,
} from "../domain/build.js";
import { type Job, storedJob } from "../domain/job.js";
import { planJobs } from "../domain/jobs-from-steps.js";
import { deriveBuildState } from "../domain/state-machine.js";
import { buildsToSupersede } from "../domain/supersede.js";
import { buildEvent, buildEventKey, jobEvent } from "../events/state-events.js";
import type { BuildCancel } from "../lifecycle/build-cancel.js";
import type { BuildWithJobs } from "../lifecycle/reconcile.js";
import {
  type CreationClaim,
  DuplicateBuildNumberError,
  DuplicateClaimError,
  FIRST_STATE_VERSION,
} from "../store/build-repository.js";
import { CLAIM_GRACE_MS, clearClaim } from "./creation-claims.js";
import { createNumberAllocator } from "./number-allocator.js";

/** What a new build is made of. */
export interface NewBuild {
  pipeline: Pipeline;
  organizationSlug: string;
  creator: UserSnapshot | null;
  commit: string;
  branch: string;
  message: string;
  author: { name: string; email: string } | null;
  cleanCheckout: boolean;
  env: Record<string, string>;
  metaData: Record<string, string>;
  pullRequest: BuildPullRequest | null;
  source: string;
  /** A tag push's tag; none when absent. */
  tag?: string | null;
  /** The forge event and action of a webhook build; none when absent. */
  sourceEvent?: string | null;
  sourceAction?: string | null;
  rebuiltFrom: { id: string; number: number } | null;
  /** The trigger job creating it, for builds a trigger step starts. */
  triggeredFrom?: TriggeredFrom | null;
  /** Its id, when the caller must find it again (a trigger job's child build); a new UUID otherwise. */
  id?: string;
  /**
   * When it was asked for (its created_at), taken before the pipeline was checked: a build admitted before an
   * archive completed is never stamped after it. Now when absent.
   */
  at?: Date;
}

/** Creating builds: numbering, planning jobs from the pipeline's steps, and superseding older builds. */
export function createBuildCreation(
  ctx: BuildsContext,
  cancel: BuildCancel,
  settled?: (build: Build, jobs: readonly Job[]) => void,
) {
  const { repo, now, withLock } = ctx;
  const numbers = createNumberAllocator((pipelineId, count) => repo.nextNumber(pipelineId, count));

  /** Applies the pipeline's skip-queued and cancel-running rules to earlier builds of the new build's branch. */
  const supersede = async (build: Build, pipeline: Pipeline) => {
    if (!pipeline.skipQueuedBranchBuilds && !pipeline.cancelRunningBranchBuilds) return;
    const candidates = await repo.unfinishedOnBranch(build.pipelineId, build.branch, build.number);
    const plan = buildsToSupersede(
      { branch: build.branch, number: build.number },
      candidates.map((c) => ({ id: c.id, number: c.number, branch: c.branch, state: c.state, blocked: c.blocked })),
      {
        skipQueued: pipeline.skipQueuedBranchBuilds,
        skipQueuedFilter: pipeline.skipQueuedBranchBuildsFilter ?? null,
        cancelRunning: pipeline.cancelRunningBranchBuilds,
        cancelRunningFilter: pipeline.cancelRunningBranchBuildsFilter ?? null,
      },
    );
    for (const id of plan.skip) await withLock(id, () => cancel.skip(id));
    for (const id of plan.cancel) {
      await withLock(id, async () => {
        const target = await repo.findBuildById(id);
        if (target && !target.finishedAt) await cancel.cancel(target, `superseded by build #${build.number}`);
      });
    }
  };

  /**
   * Claims the creation of a build. A claim standing for the same build id (a trigger's child build, whose id is
   * derived from its trigger job) is cleared when it is past the grace; within it, that creation is under way.
   */
  const claim = async (c: CreationClaim) => {
    try {
      await repo.insertClaim(c);
      return;
    } catch (err) {
      if (!(err instanceof DuplicateClaimError)) throw err;
    }
    const standing = await repo.findClaim(c.buildId);
    if (standing && now().getTime() - standing.createdAt.getTime() <= CLAIM_GRACE_MS) {
      throw new ConnectError(`build ${c.buildId} is being created: try again`, Code.Unavailable);
    }
    if (standing && (await withLock(c.buildId, () => clearClaim(ctx, standing))) === "stood") {
      throw new ConnectError(`build ${c.buildId} exists already`, Code.AlreadyExists);
    }
    await repo.insertClaim(c);
  };

  /** Gives up a creation whose build is known not to be stored: its jobs and its claim go. */
  const abandon = async (buildId: string, jobIds: readonly string[]) => {
    await repo.deleteJobs(buildId, jobIds);
    await repo.removeClaim(buildId);
  };

  /** Creates a build of a pipeline with jobs planned from its steps. */
  const create = async (input: NewBuild): Promise<BuildWithJobs> => {
    const { pipeline } = input;
    const at = input.at ?? now();
    const buildId = input.id ?? newId();
    let number = await numbers.next(pipeline.id);
    const timeouts = {
      default: pipeline.defaultCommandStepTimeout ?? null,
      maximum: pipeline.maximumCommandStepTimeout ?? null,
    };
    const snapshot: PipelineSnapshot = {
      name: pipeline.name,
      repository: pipeline.repository,
      defaultBranch: pipeline.defaultBranch,
      providerId: pipeline.provider?.id ?? "git",
      env: { ...pipeline.env, ...pipeline.configurationEnv },
      organizationSlug: input.organizationSlug,
      timeouts,
    };
    const context = conditionContext({
      ...input,
      tag: input.tag ?? null,
      sourceEvent: input.sourceEvent ?? null,
      sourceAction: input.sourceAction ?? null,
      id: buildId,
      number,
      pipelineId: pipeline.id,
      pipelineSlug: pipeline.slug,
      organizationId: pipeline.organizationId,
      pipeline: snapshot,
    });
    const steps = stepsFromMessages(pipeline.steps);
    const stepIds = steps.map(() => newId());
    const planned = planJobs(steps, context, { newId, timeouts });
    // One read of the cluster's queues for all the jobs (cached a few seconds; null when the agents service cannot
    // say, and the jobs name their queue when an agent takes them).
    const clusterId = pipeline.clusterId ?? null;
    const queueIds = await ctx.clusterQueues.of(pipeline.organizationId, clusterId);
    const jobs: Job[] = planned.map((p) =>
      storedJob(
        p,
        {
          buildId,
          organizationId: pipeline.organizationId,
          pipelineId: pipeline.id,
          buildNumber: number,
          clusterId,
          stepId: stepIds[p.stepPosition] ?? newId(),
        },
        at,
        queueIds,
      ),
    );
    const derived = deriveBuildState(planned, { cancelRequested: false });
    const draft: Build = {
      id: buildId,
      organizationId: pipeline.organizationId,
      pipelineId: pipeline.id,
      pipelineSlug: pipeline.slug,
      pipeline: snapshot,
      number,
      state: derived.state,
      blocked: derived.blocked,
      cancelRequested: false,
      cancelReason: null,
      message: input.message,
      commit: input.commit,
      branch: input.branch,
      env: input.env,
      metaData: input.metaData,
      source: input.source,
      creator: input.creator,
      author: input.author,
      pullRequest: input.pullRequest,
      tag: input.tag ?? null,
      sourceEvent: input.sourceEvent ?? null,
      sourceAction: input.sourceAction ?? null,
      rebuiltFrom: input.rebuiltFrom,
      triggeredFrom: input.triggeredFrom ?? null,
      cleanCheckout: input.cleanCheckout,
      createdAt: at,
      scheduledAt: at,
      startedAt: null,
      finishedAt: derived.finished ? at : null,
      version: FIRST_STATE_VERSION,
    };
    // The new build changes the pipeline's counters: the outbox notes it first (free while the note stands).
    await ctx.markCounts(pipeline.id);
    // The creation is claimed, then its jobs are stored, then the build in its first state: nothing shows the build
    // before it stands with all its jobs, and a creation cut off before storing it is found by its claim.
    const claimedAt = now();
    const jobIds = jobs.map((job) => job.id);
    await claim({ buildId, pipelineId: pipeline.id, jobIds, createdAt: claimedAt });
    // The jobs' events go with the build's: the build's mark says the whole creation committed.
    let announced: Awaited<ReturnType<BuildsContext["stateEvents"]["announceNew"]>>;
    for (let attempt = 0; ; attempt++) {
      for (const job of jobs) job.buildNumber = number;
      // Its events are made durable first, under this number (events/state-events.ts).
      announced = await ctx.stateEvents.announceNew(draft, (mark, i) => buildEventKey(buildId, mark, i), [
        buildEvent(SUBJECTS.builds.buildCreated, { ...draft, number }, ""),
        ...jobs.filter((job) => job.state === "scheduled").map((job) => jobEvent(job, "pending")),
      ]);
      await repo.insertJobs(jobs);
      // A creation this slow may have been taken for cut off, and its jobs removed: it gives up instead.
      if (now().getTime() - claimedAt.getTime() > CLAIM_GRACE_MS / 2) {
        await abandon(buildId, jobIds);
        await announced.abandoned();
        throw new ConnectError("the build took too long to store: try again", Code.Unavailable);
      }
      try {
        await repo.insertBuild({ ...draft, number });
        break;
      } catch (err) {
        await announced.abandoned();
        if (!(err instanceof DuplicateBuildNumberError)) throw err;
        // The number was stored already (its counter was behind): the jobs go again under the next number.
        await repo.deleteJobs(buildId, jobIds);
        if (attempt >= MAX_ATTEMPTS) {
          await repo.removeClaim(buildId);
          throw err;
        }
        await repo.raiseNumber(pipeline.id, number);
        number = await numbers.next(pipeline.id);
      }
    }
    // The claim's work is done; its removal is not waited for (the repair removes a claim whose build stands).
    repo.removeClaim(buildId).catch((err: unknown) => {
      ctx.logger.warn({ err, buildId }, "creation claim not removed: the creation repair will remove it");
    });
    // What is stored now, without reading it back.
    const build: Build = { ...draft, number };
    // The events go out in order (each waits for the stream's acknowledgement).
    await announced.stored();
    await supersede(build, pipeline);
    ctx.publishCounts(pipeline.id);
    // The jobs were planned and advanced already: what a reconcile would do after a change (start trigger jobs,
    // queue concurrency groups) is told of the new build directly, without reading it back.
    settled?.(build, jobs);
    return { build, jobs };
  };

  return { create };
}

/** The pipeline a build is created for, when builds may be created for it on `branch`. */
export function checkPipeline(pipeline: Pipeline | undefined, branch: string, ignoreFilters: boolean): Pipeline {
  if (!pipeline) throw invalidFields([{ field: "pipeline", code: "is required" }]);
  if (pipeline.archivedAt) throw failedPrecondition("Pipeline is archived: unarchive it before creating builds.");
  const filter = pipeline.branchConfiguration;
  if (!ignoreFilters && filter && !matchesBranchFilter(filter, branch)) {
    throw failedPrecondition(
      `Branch "${branch}" does not match the pipeline's branch filter "${filter}": use another branch, or set ignore_pipeline_branch_filters.`,
    );
  }
  return pipeline;
}

export type BuildCreation = ReturnType<typeof createBuildCreation>;
