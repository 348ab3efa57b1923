import { BuildChangedSchema, JobStateChangedSchema, PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import {
  createCoalescer,
  createKeyedLock,
  type EventPublisher,
  type KeyedLock,
  type Logger,
  SUBJECTS,
  toTimestamp,
} from "@conveyor/runtime";
import { buildMessage, jobMessage } from "./build-message.js";
import type { BuildRepository } from "./build-repository.js";
import type { ConcurrencySlotRepository } from "./concurrency-slot-repository.js";
import type { Build } from "./domain/build.js";
import type { Job } from "./domain/job.js";
import type { JobLogRepository } from "./job-log-repository.js";
import type { PipelineUploadRepository } from "./pipeline-upload-repository.js";

export interface BuildServiceDeps {
  repo: BuildRepository;
  logs: JobLogRepository;
  uploads: PipelineUploadRepository;
  slots: ConcurrencySlotRepository;
  events: EventPublisher;
  logger: Logger;
  now?: () => Date;
}

/** How often a compare-and-set loop retries before giving up (only under heavy contention on one build). */
export const MAX_ATTEMPTS = 20;

/** What every part of the builds service shares: storage, the clock, per-build locks and event publishing. */
export interface BuildsContext {
  repo: BuildRepository;
  logs: JobLogRepository;
  logger: Logger;
  now: () => Date;
  /** Serializes the compare-and-set sections per build (and numbering per pipeline); see createKeyedLock. */
  withLock: KeyedLock;
  publishBuild(subject: string, build: Build, previousState: string): Promise<void>;
  publishJob(job: Job, previousState: string): Promise<void>;
  /** Asks for a pipeline's counters to be recounted and announced soon (coalesced, off the caller's path). */
  publishCounts(pipelineId: string): void;
  /** Resolves once no recount is pending. */
  countsIdle(): Promise<void>;
}

/** Creates the shared context of the builds service. */
export function createBuildsContext(deps: BuildServiceDeps): BuildsContext {
  const { repo, events, logger } = deps;
  const now = deps.now ?? (() => new Date());

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

  return {
    repo,
    logs: deps.logs,
    logger,
    now,
    withLock: createKeyedLock(),
    async publishBuild(subject, build, previousState) {
      await events.publish(subject, BuildChangedSchema, { build: buildMessage(build), previousState });
    },
    async publishJob(job, previousState) {
      await events.publish(SUBJECTS.builds.jobStateChanged, JobStateChangedSchema, {
        job: jobMessage(job),
        previousState,
        organizationId: job.organizationId,
        pipelineId: job.pipelineId,
        buildNumber: job.buildNumber,
      });
    },
    publishCounts: (pipelineId) => counts.request(pipelineId),
    countsIdle: () => counts.idle(),
  };
}
