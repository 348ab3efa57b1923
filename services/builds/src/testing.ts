/**
 * The builds service in memory, for other services' tests (`@conveyor/builds/testing`): the real BuildsService
 * (builds-service.ts over createBuildsParts) on in-memory repositories and an in-memory event bus, so that a caller's
 * tests meet the real state machine instead of a copy of it. Importing it starts nothing (main.ts is the process).
 * It is built into dist/testing.js with the fakes it imports, for the package's `./testing` export.
 */
import { type DescMessage, fromBinary, type MessageShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { BuildsService } from "@conveyor/proto/builds";
import { createLogger, type EventPublisher, encodeEvent, type Logger, newId } from "@conveyor/runtime";
import { createBuildsParts } from "./builds-context.js";
import { createBuildsService } from "./builds-service.js";
import type { Build } from "./domain/build.js";
import { type Job, queueOf } from "./domain/job.js";
import type { LogChunkNotices } from "./jobs/log-chunk-notices.js";
import type { BuildRepository } from "./store/build-repository.js";
import { FIRST_STATE_VERSION } from "./store/build-repository-contract.js";
import type { ConcurrencySlotRepository } from "./store/concurrency-slot-repository.js";
import type { JobLogRepository } from "./store/job-log-repository.js";
import { createMemoryBuildRepository } from "./store/memory-build-repository.js";
import { createMemoryConcurrencySlotRepository } from "./store/memory-concurrency-slot-repository.js";
import { createMemoryJobLogRepository } from "./store/memory-job-log-repository.js";
import { createMemoryPipelineUploadRepository } from "./store/memory-pipeline-upload-repository.js";
import type { PipelineUploadRepository } from "./store/pipeline-upload-repository.js";
import { aBuild, aJob } from "./test-support.js";

export type { Build } from "./domain/build.js";
export type { Job } from "./domain/job.js";
export type { LogChunkNotices, StoredChunk } from "./jobs/log-chunk-notices.js";
export type { BuildRepository, JobUpdate } from "./store/build-repository-contract.js";
export type { ConcurrencySlotRepository } from "./store/concurrency-slot-repository.js";
export type { JobLogRepository } from "./store/job-log-repository.js";
export type { PipelineUploadRepository } from "./store/pipeline-upload-repository.js";

/** An event as it went out: its subject and its protobuf bytes, as NATS carries them. */
export interface PublishedEvent {
  subject: string;
  data: Uint8Array;
}

/** An EventPublisher that keeps what was published and hands it, decoded from its bytes, to subscribers at once. */
export interface MemoryEventBus extends EventPublisher {
  readonly published: PublishedEvent[];
  /** Calls `listener` with every event published on `subject` from now on; returns the unsubscribe. */
  subscribe<D extends DescMessage>(subject: string, schema: D, listener: (event: MessageShape<D>) => void): () => void;
}

/** Creates an in-memory event bus. */
export function createMemoryEventBus(): MemoryEventBus {
  const published: PublishedEvent[] = [];
  const listeners = new Map<string, Set<(data: Uint8Array) => void>>();
  return {
    published,
    async publish(subject, schema, value) {
      const event = encodeEvent(subject, schema, value);
      published.push(event);
      for (const listener of listeners.get(subject) ?? []) listener(event.data);
    },
    subscribe(subject, schema, listener) {
      const deliver = (data: Uint8Array) => listener(fromBinary(schema, data));
      const forSubject = listeners.get(subject) ?? new Set();
      forSubject.add(deliver);
      listeners.set(subject, forSubject);
      return () => forSubject.delete(deliver);
    },
  };
}

/** What a seeded build is made of; every field has a default. */
export interface SeedBuild {
  organizationId?: string;
  /** The pipeline the build is numbered in (a new one when absent). */
  pipelineId?: string;
  /** The cluster of the pipeline, given to every job (null: unclustered). */
  clusterId?: string | null;
  /**
   * The build's jobs: a scheduled script job each, runnable now, with these fields changed. A job's `queue` and
   * its step's agent query rules follow its `agentQueryRules` unless given.
   */
  jobs?: Array<Partial<Job>>;
  /** Whether the scheduled jobs are announced (job_state_changed), as a creation announces them; default true. */
  announce?: boolean;
}

/** The builds service in memory and what a test reaches behind it. */
export interface MemoryBuilds {
  /** The BuildsService, to serve (createRouterTransport) to the code under test. */
  service: ServiceImpl<typeof BuildsService>;
  /** The repositories: a test changes state behind the service's back through them (changes nobody announces). */
  repos: {
    builds: BuildRepository;
    logs: JobLogRepository;
    uploads: PipelineUploadRepository;
    slots: ConcurrencySlotRepository;
  };
  /** Every event the service published (job_state_changed, build events, counters). */
  events: MemoryEventBus;
  /**
   * Stores a build with its jobs (by default one scheduled script job), brings the build's state in line with them
   * as the service does after any change (reconcile), and announces the scheduled jobs unless told not to.
   */
  seedBuild(init?: SeedBuild): Promise<{ build: Build; jobs: Job[] }>;
  /** Announces a job as it is stored now (job_state_changed), as the service does after changing it. */
  announce(jobId: string, previousState?: string): Promise<void>;
}

/**
 * Creates the builds service over in-memory repositories; `now` is its clock (the system's when absent), and
 * `logNotices` gets every stored log chunk (as a live page's gateway would over NATS).
 */
export function createMemoryBuildsService(
  opts: { now?: () => Date; logger?: Logger; logNotices?: LogChunkNotices } = {},
): MemoryBuilds {
  const now = opts.now ?? (() => new Date());
  const repos = {
    builds: createMemoryBuildRepository(),
    logs: createMemoryJobLogRepository(),
    uploads: createMemoryPipelineUploadRepository(),
    slots: createMemoryConcurrencySlotRepository(),
  };
  const events = createMemoryEventBus();
  const parts = createBuildsParts({
    repo: repos.builds,
    logs: repos.logs,
    uploads: repos.uploads,
    slots: repos.slots,
    events,
    logger: opts.logger ?? createLogger("builds-memory", "silent"),
    now,
    ...(opts.logNotices ? { logNotices: opts.logNotices } : {}),
  });
  const { ctx, reconcile } = parts;

  const stored = async (jobId: string): Promise<Job> => {
    const job = await repos.builds.findJob(jobId);
    if (!job) throw new Error(`no job ${jobId}`);
    return job;
  };

  return {
    service: createBuildsService(parts),
    repos,
    events,
    async seedBuild(init = {}) {
      const at = now();
      const pipelineId = init.pipelineId ?? newId();
      const build = aBuild({
        id: newId(),
        organizationId: init.organizationId ?? newId(),
        pipelineId,
        number: await repos.builds.nextNumber(pipelineId),
        createdAt: at,
        scheduledAt: at,
        version: FIRST_STATE_VERSION,
      });
      const jobs = (init.jobs ?? [{}]).map((fields, position): Job => {
        const agentQueryRules = fields.agentQueryRules ?? [];
        return aJob({
          id: newId(),
          stepPosition: position,
          stepId: newId(),
          agentQueryRules,
          queue: queueOf(agentQueryRules),
          step: { type: "script", name: "test", command: "make test", agent_query_rules: agentQueryRules },
          buildId: build.id,
          organizationId: build.organizationId,
          pipelineId,
          buildNumber: build.number,
          clusterId: init.clusterId ?? null,
          createdAt: at,
          scheduledAt: at,
          runnableAt: at,
          ...fields,
        });
      });
      // As a creation stores them: the jobs first, then the build that makes them dispatchable.
      await repos.builds.insertJobs(jobs);
      await repos.builds.insertBuild(build);
      const reconciled = await ctx.withLock(build.id, () => reconcile(build.id));
      if (init.announce ?? true) {
        for (const job of reconciled.jobs) if (job.state === "scheduled") await ctx.publishJob(job, "pending");
      }
      return reconciled;
    },
    async announce(jobId, previousState = "") {
      await ctx.publishJob(await stored(jobId), previousState);
    },
  };
}
