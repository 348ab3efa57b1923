import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { type BuildContext, matchesBranchFilter, type PipelineStep } from "@conveyor/ci-rules";
import {
  BuildChangedSchema,
  type BuildsService,
  type BuildUser,
  JobEventType,
  JobStateChangedSchema,
  PipelineCountsChangedSchema,
} from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";
import {
  createCoalescer,
  createKeyedLock,
  type EventPublisher,
  failedPrecondition,
  invalidFields,
  type Logger,
  newId,
  notFound,
  pageWindow,
  SUBJECTS,
  toTimestamp,
} from "@conveyor/runtime";
import { buildMessage, jobMessage } from "./build-message.js";
import {
  type BuildDoc,
  type BuildListFilter,
  type BuildRepository,
  DuplicateBuildNumberError,
  type JobDoc,
  type UserSnapshot,
} from "./build-repository.js";
import { planJobs } from "./domain/jobs-from-steps.js";
import { advance, applyJobEvent, cancelPlan, deriveBuildState, type JobEvent } from "./domain/state-machine.js";
import { buildsToSupersede } from "./domain/supersede.js";
import { BUILD_STATES, type BuildState } from "./domain/types.js";
import { stampsFor, toJobModel } from "./job-model.js";

export interface BuildServiceDeps {
  repo: BuildRepository;
  events: EventPublisher;
  logger: Logger;
  now?: () => Date;
}

/** "finished" in a state filter stands for these. */
const FINISHED_FILTER: BuildState[] = ["passed", "failed", "blocked", "canceled"];
const CANCELABLE: BuildState[] = ["scheduled", "running", "failing"];
/** How often a compare-and-set loop retries before giving up (only under heavy contention on one build). */
const MAX_ATTEMPTS = 20;

const EVENT_TYPES: Partial<Record<JobEventType, JobEvent["type"]>> = {
  [JobEventType.ASSIGN]: "assign",
  [JobEventType.ACCEPT]: "accept",
  [JobEventType.START]: "start",
  [JobEventType.FINISH]: "finish",
  [JobEventType.CANCEL]: "cancel",
  [JobEventType.CANCELED]: "canceled",
  [JobEventType.TIMEOUT]: "timeout",
  [JobEventType.TIMED_OUT]: "timed_out",
  [JobEventType.EXPIRE]: "expire",
  [JobEventType.UNBLOCK]: "unblock",
  [JobEventType.SKIP]: "skip",
};

function snapshot(u: BuildUser | undefined): UserSnapshot | null {
  if (!u || u.id === "") return null;
  return {
    id: u.id,
    name: u.name,
    email: u.email,
    avatarUrl: u.avatarUrl || null,
    createdAt: u.createdAt ? timestampDate(u.createdAt) : null,
  };
}

/** The builds service: creation from steps, the state machine, cancel, rebuild, lists, events. */
export function createBuildService(deps: BuildServiceDeps): ServiceImpl<typeof BuildsService> {
  return createBuildDomain(deps).service;
}

/**
 * The builds service and its background duty: `republishCounts` re-announces the counters of every pipeline
 * with recent activity, so a counters event lost on the way (NATS down for a moment) is corrected soon after.
 */
export function createBuildDomain(deps: BuildServiceDeps): {
  service: ServiceImpl<typeof BuildsService>;
  republishCounts(): Promise<void>;
} {
  const { repo, events, logger } = deps;
  const now = deps.now ?? (() => new Date());
  // Serializes the compare-and-set sections per build (and numbering per pipeline); see createKeyedLock.
  const withLock = createKeyedLock();

  const requireBuild = async (pipelineId: string, number: number): Promise<BuildDoc> => {
    const build = pipelineId !== "" && number > 0 ? await repo.findBuild(pipelineId, number) : null;
    if (!build) throw notFound("build");
    return build;
  };

  const publishCountsNow = async (pipelineId: string) => {
    try {
      const at = now();
      const counts = await repo.pipelineCounts(pipelineId);
      await events.publish(SUBJECTS.builds.pipelineCountsChanged, PipelineCountsChangedSchema, {
        pipelineId,
        ...counts,
        at: toTimestamp(at),
      });
    } catch (err) {
      logger.warn({ err, pipelineId }, "pipeline counters not published");
    }
  };

  // Counters are recounted in the background after a change, one recount per pipeline at a time: under load the
  // recounts coalesce, and the change that asked for one (a create, a job transition) does not wait for it.
  const counts = createCoalescer(publishCountsNow);
  const publishCounts = (pipelineId: string) => counts.request(pipelineId);

  const publishBuild = async (subject: string, build: BuildDoc, previousState: string) => {
    await events.publish(subject, BuildChangedSchema, { build: buildMessage(build), previousState });
  };

  const publishJob = async (job: JobDoc, previousState: string) => {
    await events.publish(SUBJECTS.builds.jobStateChanged, JobStateChangedSchema, {
      job: jobMessage(job),
      previousState,
      organizationId: job.organizationId,
      pipelineId: job.pipelineId,
      buildNumber: job.buildNumber,
    });
  };

  /**
   * Brings a build in line with its jobs: schedules jobs whose dependencies finished, then derives the build's
   * state. Every write is conditioned on what was read (job state, build version); on a lost race it reads again.
   */
  const reconcile = async (buildId: string): Promise<{ build: BuildDoc; jobs: JobDoc[] }> => {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const build = await repo.findBuildById(buildId);
      if (!build) throw notFound("build");
      let jobs = await repo.jobsOf([buildId]);
      const at = now();
      const advanced = advance(jobs.map(toJobModel));
      let raced = false;
      const changedJobs: Array<[JobDoc, string]> = [];
      for (const next of advanced) {
        const current = jobs.find((j) => j._id === next.id);
        if (!current || current.state === next.state) continue;
        const updated = await repo.updateJob(current._id, current.state, {
          state: next.state,
          ...stampsFor(current, next.state, at),
        });
        if (!updated) {
          raced = true;
          break;
        }
        changedJobs.push([updated, current.state]);
      }
      for (const [job, previous] of changedJobs) await publishJob(job, previous);
      if (raced) continue;
      if (changedJobs.length > 0) jobs = await repo.jobsOf([buildId]);

      const derived = deriveBuildState(jobs.map(toJobModel), { cancelRequested: build.cancelRequested });
      const startedAt = build.startedAt ?? earliest(jobs.map((j) => j.startedAt));
      const finishedAt = derived.finished ? (build.finishedAt ?? at) : null;
      if (
        derived.state === build.state &&
        derived.blocked === build.blocked &&
        startedAt?.getTime() === build.startedAt?.getTime() &&
        finishedAt?.getTime() === build.finishedAt?.getTime()
      ) {
        if (changedJobs.length > 0) publishCounts(build.pipelineId);
        return { build, jobs };
      }
      const updated = await repo.updateBuild(build._id, build.version, {
        state: derived.state,
        blocked: derived.blocked,
        startedAt,
        finishedAt,
      });
      if (!updated) continue;
      if (updated.state !== build.state) await publishBuild(SUBJECTS.builds.buildStateChanged, updated, build.state);
      if (updated.finishedAt && !build.finishedAt)
        await publishBuild(SUBJECTS.builds.buildFinished, updated, build.state);
      publishCounts(build.pipelineId);
      return { build: updated, jobs };
    }
    throw new Error(`build ${buildId} kept changing under ${MAX_ATTEMPTS} reconciliations`);
  };

  /** Cancels a build: queued jobs at once, jobs on agents via canceling. */
  const cancel = async (build: BuildDoc, reason: string): Promise<{ build: BuildDoc; jobs: JobDoc[] }> => {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const current = attempt === 0 ? build : await repo.findBuildById(build._id);
      if (!current) throw notFound("build");
      if (!current.cancelRequested) {
        const marked = await repo.updateBuild(current._id, current.version, {
          cancelRequested: true,
          cancelReason: reason || null,
        });
        if (!marked) continue;
      }
      const jobs = await repo.jobsOf([current._id]);
      const plan = cancelPlan(jobs.map(toJobModel));
      const at = now();
      for (const job of jobs) {
        const to = plan.cancel.includes(job._id) ? "canceled" : plan.canceling.includes(job._id) ? "canceling" : null;
        if (!to) continue;
        const updated = await repo.updateJob(job._id, job.state, { state: to, ...stampsFor(job, to, at) });
        if (updated) await publishJob(updated, job.state);
      }
      return reconcile(current._id);
    }
    throw new Error(`build ${build._id} could not be canceled under contention`);
  };

  /** Applies the pipeline's skip-queued and cancel-running rules to earlier builds of the new build's branch. */
  const supersede = async (build: BuildDoc, pipeline: Pipeline) => {
    if (!pipeline.skipQueuedBranchBuilds && !pipeline.cancelRunningBranchBuilds) return;
    const candidates = await repo.unfinishedOnBranch(build.pipelineId, build.branch, build.number);
    const plan = buildsToSupersede(
      { branch: build.branch, number: build.number },
      candidates.map((c) => ({ id: c._id, number: c.number, branch: c.branch, state: c.state, blocked: c.blocked })),
      {
        skipQueued: pipeline.skipQueuedBranchBuilds,
        skipQueuedFilter: pipeline.skipQueuedBranchBuildsFilter ?? null,
        cancelRunning: pipeline.cancelRunningBranchBuilds,
        cancelRunningFilter: pipeline.cancelRunningBranchBuildsFilter ?? null,
      },
    );
    for (const id of plan.skip) await withLock(id, () => skipBuild(id));
    for (const id of plan.cancel) {
      await withLock(id, async () => {
        const target = await repo.findBuildById(id);
        if (target && !target.finishedAt) await cancel(target, `superseded by build #${build.number}`);
      });
    }
  };

  /** Marks a not-yet-started build skipped, with its unstarted jobs. */
  const skipBuild = async (id: string) => {
    const build = await repo.findBuildById(id);
    if (build?.state !== "scheduled" || build.startedAt) return;
    const jobs = await repo.jobsOf([id]);
    const at = now();
    for (const job of jobs) {
      if (!["pending", "waiting", "scheduled", "assigned", "blocked", "limited"].includes(job.state)) continue;
      const updated = await repo.updateJob(job._id, job.state, { state: "skipped", finishedAt: at });
      if (updated) await publishJob(updated, job.state);
    }
    const updated = await repo.updateBuild(id, build.version, { state: "skipped", blocked: false, finishedAt: at });
    if (updated) {
      await publishBuild(SUBJECTS.builds.buildStateChanged, updated, build.state);
      await publishBuild(SUBJECTS.builds.buildFinished, updated, build.state);
    }
  };

  /** Creates a build of a pipeline with jobs planned from its steps. */
  const create = async (input: {
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
    pullRequest: { id: string; base: string; repository: string } | null;
    source: string;
    rebuiltFrom: { id: string; number: number } | null;
  }) => {
    const { pipeline } = input;
    const at = now();
    const buildId = newId();
    let number = await withLock(`number:${pipeline.id}`, () => repo.nextNumber(pipeline.id));
    const ctx: BuildContext = {
      id: buildId,
      number,
      branch: input.branch,
      commit: input.commit,
      message: input.message,
      source: input.source,
      tag: null,
      env: input.env,
      pullRequest: input.pullRequest
        ? { id: input.pullRequest.id, baseBranch: input.pullRequest.base || null, draft: false, labels: [] }
        : null,
      creator: input.creator && { id: input.creator.id, name: input.creator.name, email: input.creator.email },
      author: input.author,
      pipeline: { slug: pipeline.slug, defaultBranch: pipeline.defaultBranch, id: pipeline.id },
      organization: { slug: input.organizationSlug, id: pipeline.organizationId },
    };
    const steps = pipeline.steps as unknown as PipelineStep[];
    const stepIds = steps.map(() => newId());
    const planned = planJobs(steps, ctx, { newId });
    const jobDocs: JobDoc[] = planned.map((p) => ({
      _id: p.id,
      buildId,
      organizationId: pipeline.organizationId,
      pipelineId: pipeline.id,
      buildNumber: number,
      type: p.type,
      stepIndex: p.stepIndex,
      stepId: stepIds[p.stepIndex] ?? newId(),
      stepKey: p.stepKey,
      clusterId: pipeline.clusterId ?? null,
      state: p.state,
      name: p.name,
      label: p.label,
      command: p.command,
      agentQueryRules: p.agentQueryRules,
      envJson: JSON.stringify(p.env),
      artifactPaths: p.artifactPaths,
      timeoutInMinutes: p.timeoutInMinutes,
      priority: p.priority,
      parallelGroupIndex: p.parallelGroupIndex,
      parallelGroupTotal: p.parallelGroupTotal,
      concurrency: p.concurrency,
      concurrencyGroup: p.concurrencyGroup,
      dependsOn: p.dependsOn,
      allowDependencyFailure: p.allowDependencyFailure,
      allowFailureOf: p.allowFailureOf ?? [],
      continueOnFailure: p.continueOnFailure,
      blockedState: p.blockedState,
      isInput: p.isInput,
      softFailJson: JSON.stringify(p.softFail),
      exitStatus: null,
      softFailed: false,
      brokenReason: p.brokenReason,
      retried: false,
      triggerJson: p.trigger ? JSON.stringify(p.trigger) : null,
      stepJson: JSON.stringify(p.step),
      agent: null,
      createdAt: at,
      scheduledAt: p.state === "scheduled" ? at : null,
      runnableAt: p.state === "scheduled" ? at : null,
      startedAt: null,
      finishedAt: ["broken", "skipped", "passed"].includes(p.state) ? at : null,
      unblockedAt: null,
    }));
    const derived = deriveBuildState(planned, { cancelRequested: false });
    const draft: BuildDoc = {
      _id: buildId,
      organizationId: pipeline.organizationId,
      pipelineId: pipeline.id,
      pipelineSlug: pipeline.slug,
      number,
      state: derived.state,
      blocked: derived.blocked,
      cancelRequested: false,
      cancelReason: null,
      message: input.message,
      commit: input.commit,
      branch: input.branch,
      envJson: JSON.stringify(input.env),
      metaDataJson: JSON.stringify(input.metaData),
      metaPairs: Object.entries(input.metaData).map(([k, v]) => `${k}=${v}`),
      source: input.source,
      creator: input.creator,
      author: input.author,
      pullRequest: input.pullRequest,
      rebuiltFrom: input.rebuiltFrom,
      cleanCheckout: input.cleanCheckout,
      createdAt: at,
      scheduledAt: at,
      startedAt: null,
      finishedAt: derived.finished ? at : null,
      version: 1,
    };
    // The build claims its number first, in state "creating" (the unique index is the cross-process guard), then
    // its jobs are stored, then it takes its first real state.
    for (let attempt = 0; ; attempt++) {
      try {
        await repo.insertBuild({ ...draft, number, state: "creating", blocked: false, finishedAt: null });
        break;
      } catch (err) {
        if (!(err instanceof DuplicateBuildNumberError) || attempt >= MAX_ATTEMPTS) throw err;
        await repo.raiseNumber(pipeline.id, number);
        number = await withLock(`number:${pipeline.id}`, () => repo.nextNumber(pipeline.id));
      }
    }
    for (const job of jobDocs) job.buildNumber = number;
    await repo.insertJobs(jobDocs);
    const build = await repo.updateBuild(buildId, draft.version, {
      state: draft.state,
      blocked: draft.blocked,
      finishedAt: draft.finishedAt,
    });
    if (!build) throw new Error(`build ${buildId} changed while it was being created`);
    await publishBuild(SUBJECTS.builds.buildCreated, build, "");
    await supersede(build, pipeline);
    publishCounts(pipeline.id);
    return { build, jobs: jobDocs };
  };

  const checkPipeline = (pipeline: Pipeline | undefined, branch: string, ignoreFilters: boolean): Pipeline => {
    if (!pipeline) throw invalidFields([{ field: "pipeline", code: "is required" }]);
    if (pipeline.archivedAt) throw failedPrecondition("Pipeline is archived: unarchive it before creating builds.");
    const filter = pipeline.branchConfiguration;
    if (!ignoreFilters && filter && !matchesBranchFilter(filter, branch)) {
      throw failedPrecondition(
        `Branch "${branch}" does not match the pipeline's branch filter "${filter}": use another branch, or set ignore_pipeline_branch_filters.`,
      );
    }
    return pipeline;
  };

  /** Cancel of one build, under its lock. */
  const cancelLocked = async (pipelineId: string, number: number, reason: string) => {
    const build = await requireBuild(pipelineId, number);
    // A build waiting at a block step shows its blocked_state (passed by default) but is not finished.
    const cancelable = CANCELABLE.includes(build.state) || build.blocked;
    if (!cancelable || build.finishedAt)
      throw failedPrecondition(`Build can't be canceled because it's ${build.state}`);
    if (build.cancelRequested) {
      const current = await reconcile(build._id);
      return { build: buildMessage(current.build, current.jobs) };
    }
    const result = await cancel(build, reason);
    return { build: buildMessage(result.build, result.jobs) };
  };

  const republishCounts = async () => {
    const since = new Date(now().getTime() - 10 * 60_000);
    for (const pipelineId of await repo.activePipelines(since)) publishCounts(pipelineId);
    await counts.idle();
  };

  const service: ServiceImpl<typeof BuildsService> = {
    async createBuild(req) {
      const problems = [];
      const commit = req.commit.trim();
      const branch = req.branch.trim();
      if (commit === "") problems.push({ field: "commit", code: "can't be blank" });
      if (branch === "") problems.push({ field: "branch", code: "can't be blank" });
      if (req.pullRequestId !== "" && !/^\d+$/.test(req.pullRequestId)) {
        problems.push({ field: "pull_request_id", code: "must be a pull request number" });
      }
      if (problems.length > 0) throw invalidFields(problems);
      const pipeline = checkPipeline(req.pipeline, branch, req.ignorePipelineBranchFilters);
      const creator = snapshot(req.creator);
      const author =
        req.author && (req.author.name !== "" || req.author.email !== "")
          ? { name: req.author.name, email: req.author.email }
          : creator && { name: creator.name, email: creator.email };
      const { build } = await create({
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
            ? { id: req.pullRequestId, base: req.pullRequestBaseBranch, repository: req.pullRequestRepository }
            : null,
        source: req.source || "api",
        rebuiltFrom: null,
      });
      const latest = await withLock(build._id, () => reconcile(build._id));
      return { build: buildMessage(latest.build, latest.jobs) };
    },

    async getBuild(req) {
      const build = await requireBuild(req.pipelineId, req.number);
      return { build: buildMessage(build, await repo.jobsOf([build._id])) };
    },

    async listBuilds(req) {
      if (req.organizationIds.length === 0 && req.pipelineIds.length === 0) return { builds: [], hasMore: false };
      const states = new Set<BuildState>();
      for (const s of req.states) {
        if (s === "finished") for (const f of FINISHED_FILTER) states.add(f);
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
      const page = await repo.listBuilds(filter, skip, perPage + 1);
      const builds = page.slice(0, perPage);
      const jobs = req.excludeJobs ? [] : await repo.jobsOf(builds.map((b) => b._id));
      const byBuild = new Map<string, JobDoc[]>();
      for (const job of jobs) byBuild.set(job.buildId, [...(byBuild.get(job.buildId) ?? []), job]);
      return { builds: builds.map((b) => buildMessage(b, byBuild.get(b._id) ?? [])), hasMore: page.length > perPage };
    },

    async cancelBuild(req) {
      const found = await requireBuild(req.pipelineId, req.number);
      return withLock(found._id, () => cancelLocked(req.pipelineId, req.number, req.reason));
    },

    async rebuildBuild(req) {
      const pipeline = req.pipeline;
      if (!pipeline) throw invalidFields([{ field: "pipeline", code: "is required" }]);
      const original = await requireBuild(pipeline.id, req.number);
      if (!pipeline.allowRebuilds) throw failedPrecondition("Rebuilds are not allowed for this pipeline.");
      if (pipeline.archivedAt) throw failedPrecondition("Pipeline is archived: unarchive it before rebuilding.");
      const { build } = await create({
        pipeline,
        organizationSlug: req.organizationSlug,
        creator: snapshot(req.creator) ?? original.creator,
        commit: original.commit,
        branch: original.branch,
        message: original.message,
        author: original.author,
        cleanCheckout: original.cleanCheckout,
        env: JSON.parse(original.envJson) as Record<string, string>,
        metaData: JSON.parse(original.metaDataJson) as Record<string, string>,
        pullRequest: original.pullRequest,
        source: "api",
        rebuiltFrom: { id: original._id, number: original.number },
      });
      const latest = await withLock(build._id, () => reconcile(build._id));
      return { build: buildMessage(latest.build, latest.jobs) };
    },

    async transitionJob(req) {
      const type = EVENT_TYPES[req.event];
      if (!type) throw invalidFields([{ field: "event", code: "is required" }]);
      const found = await repo.findJob(req.jobId);
      if (!found) throw notFound("job");
      return withLock(found.buildId, async () => {
        for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
          const job = await repo.findJob(req.jobId);
          if (!job) throw notFound("job");
          const event: JobEvent = type === "finish" ? { type, exitStatus: req.exitStatus } : ({ type } as JobEvent);
          const result = applyJobEvent(toJobModel(job), event);
          if (!result.ok) throw failedPrecondition(result.reason);
          const at = req.at ? timestampDate(req.at) : now();
          const next = result.job;
          const updated = await repo.updateJob(job._id, job.state, {
            state: next.state,
            exitStatus: next.exitStatus,
            softFailed: next.softFailed,
            ...(type === "assign" && req.agent
              ? {
                  agent: {
                    id: req.agent.id,
                    name: req.agent.name,
                    hostname: req.agent.hostname,
                    ipAddress: req.agent.ipAddress,
                    userAgent: req.agent.userAgent,
                    connectionState: req.agent.connectionState || "connected",
                    createdAt: req.agent.createdAt ? timestampDate(req.agent.createdAt) : null,
                  },
                }
              : {}),
            ...stampsFor(job, next.state, at),
          });
          if (!updated) continue;
          await publishJob(updated, job.state);
          const { build, jobs } = await reconcile(job.buildId);
          return { job: jobMessage(jobs.find((j) => j._id === job._id) ?? updated), build: buildMessage(build, jobs) };
        }
        throw new Error(`job ${req.jobId} kept changing under ${MAX_ATTEMPTS} attempts`);
      });
    },
  };
  return { service, republishCounts };
}

function earliest(dates: Array<Date | null>): Date | null {
  const times = dates.filter((d): d is Date => d !== null).map((d) => d.getTime());
  return times.length === 0 ? null : new Date(Math.min(...times));
}
