import type { ServiceImpl } from "@connectrpc/connect";
import type { BuildsService } from "@conveyor/proto/builds";
import type { Fences } from "@conveyor/runtime";
import { type BuildServiceDeps, createBuildsContext } from "./builds-context.js";
import { createBuildCreation } from "./creation/build-creation.js";
import { createCreationRepair } from "./creation/creation-repair.js";
import { createPipelineCopies } from "./creation/current-pipelines.js";
import type { Build } from "./domain/build.js";
import type { Job } from "./domain/job.js";
import { createConcurrencyGate } from "./jobs/concurrency-gate.js";
import { createJobLogs, type LogLimits } from "./jobs/job-logs.js";
import { createJobRetries } from "./jobs/job-retries.js";
import { createJobSweeps, type SweepSettings } from "./jobs/job-sweeps.js";
import { createJobTransitions } from "./jobs/job-transitions.js";
import { createJobTriggers, type JobTriggers, type TriggerLookups } from "./jobs/job-triggers.js";
import { createJobUnblock, type JobUnblock } from "./jobs/job-unblock.js";
import { createPipelineUpload } from "./jobs/pipeline-upload.js";
import { createBuildCancel } from "./lifecycle/build-cancel.js";
import { createReconcile } from "./lifecycle/reconcile.js";
import { createBuildMetaData } from "./meta-data/build-meta-data.js";
import { createBuildRpcs } from "./rpc/builds-rpc.js";
import { createJobActionRpcs } from "./rpc/job-actions-rpc.js";
import { createJobRpcs } from "./rpc/jobs-rpc.js";
import { createBatchedReads } from "./rpc/read-builds-rpc.js";

export type { BuildServiceDeps } from "./builds-context.js";

/** How recent a pipeline's activity must be for republishCounts to announce its counters again. */
const COUNTS_ACTIVE_MS = 10 * 60_000;

/** The limits the service applies unless told otherwise. */
export const DEFAULT_LOG_LIMITS: LogLimits = { maxChunkBytes: 1024 * 1024, maxLogBytes: 256 * 1024 * 1024 };
/** Without the pipelines and identity services, a trigger finds no pipeline and fails saying so. */
const NO_TRIGGER_LOOKUPS: TriggerLookups = {
  pipeline: async () => null,
  mayBuild: async () => false,
  ruleAllows: async () => false,
};
export const DEFAULT_SWEEP_SETTINGS: SweepSettings = { scheduledExpiryMs: 24 * 3600_000, timeoutGraceMs: 120_000 };

/** The builds service: creation from steps, the state machine, cancel, rebuild, lists, jobs, logs, meta-data. */
export function createBuildService(
  deps: BuildServiceDeps & { logLimits?: LogLimits },
): ServiceImpl<typeof BuildsService> {
  return createBuildDomain(deps).service;
}

/**
 * The builds service and its background duties: `republishCounts` re-announces the counters of every pipeline
 * with recent activity (COUNTS_ACTIVE_MS), so a counters event lost on the way (NATS down for a moment) is corrected
 * soon after;
 * `requeueStale` gives jobs back to the queue whose agent never accepted them.
 */
export function createBuildDomain(
  deps: BuildServiceDeps & {
    logLimits?: LogLimits;
    sweeps?: SweepSettings;
    triggers?: TriggerLookups;
    /** The pipelines' fences (fences.ts): a caller's copy at least as new as its fence is not read again. */
    fences?: Pick<Fences, "read">;
  },
) {
  const ctx = createBuildsContext(deps);
  const retries = createJobRetries(ctx);
  // Triggers need the transitions, which need reconcile: the hook finds them once they exist.
  let triggers: JobTriggers | undefined;
  const gate = createConcurrencyGate(ctx, deps.slots);
  const settled = (build: Build, jobs: readonly Job[]) => {
    gate.settled(build, jobs);
    triggers?.settled(build, jobs);
  };
  // Unblocking needs reconcile, whose heal stores the unblocked fields: the hook finds it once it exists.
  let unblock: JobUnblock | undefined;
  const heal = async (jobs: readonly Job[]) => (await retries.heal(jobs)) || ((await unblock?.heal(jobs)) ?? false);
  const reconcile = createReconcile(ctx, { heal, settled });
  const cancel = createBuildCancel(ctx, reconcile);
  const creation = createBuildCreation(ctx, cancel, settled);
  const transitions = createJobTransitions(ctx, reconcile, retries);
  const logs = createJobLogs(ctx, deps.logLimits ?? DEFAULT_LOG_LIMITS);
  const metaData = createBuildMetaData(ctx);
  unblock = createJobUnblock(ctx, reconcile, metaData);
  const upload = createPipelineUpload(ctx, reconcile, deps.uploads);
  triggers = createJobTriggers(ctx, creation, transitions, deps.triggers ?? NO_TRIGGER_LOOKUPS);
  const repair = createCreationRepair(ctx);
  const sweeps = createJobSweeps(ctx, transitions, [triggers, gate, repair], deps.sweeps ?? DEFAULT_SWEEP_SETTINGS);

  const lookups = deps.triggers;
  const pipelines = createPipelineCopies({
    ...(lookups ? { read: (organizationId: string, id: string) => lookups.pipeline(organizationId, id) } : {}),
    ...(deps.fences ? { fences: deps.fences } : {}),
    logger: ctx.logger,
  });
  const buildRpcs = createBuildRpcs(ctx, { creation, cancel, pipelines });
  const service: ServiceImpl<typeof BuildsService> = {
    ...buildRpcs,
    ...createBatchedReads(buildRpcs),
    ...createJobRpcs(ctx, { transitions, logs, metaData }),
    ...createJobActionRpcs(ctx, { retries, unblock, upload, reconcile }),
  };

  let scannedOnce = false;
  return {
    service,
    /** The repository every write of the process must go through (with a read cache, it announces each write). */
    repo: ctx.repo,
    async republishCounts() {
      const since = new Date(ctx.now().getTime() - COUNTS_ACTIVE_MS);
      // The first pass reads the database (pipelines with unfinished or recently finished builds), which corrects
      // counters whatever happened before this process started; it decodes every unfinished build, thousands when
      // agents fall behind. Later passes re-announce the pipelines this process changed since, at no cost to the
      // database: each replica covers its own changes, and the outbox those of a process that died.
      const pipelines = scannedOnce ? ctx.countedSince(since) : await ctx.repo.activePipelines(since);
      scannedOnce = true;
      ctx.reannounceCounts(pipelines);
      await ctx.countsIdle();
    },
    /** One pass of the outbox relay: republishes counters whose announcement failed or never happened. */
    relayOutbox: () => ctx.outbox.relay(),
    /** Resolves once no counters announcement is under way (tests, shutdown). */
    countsIdle: () => ctx.countsIdle(),
    /** Returns jobs assigned more than `afterMs` ago and never accepted to the queue; how many went back. */
    requeueStale: (afterMs: number) => transitions.requeueStale(new Date(ctx.now().getTime() - afterMs), 100),
    /** Times out running jobs past their deadline, ends those their agent never stopped, expires stale ones. */
    sweepJobs: () => sweeps.sweep(),
  };
}
