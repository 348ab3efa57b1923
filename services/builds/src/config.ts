import { createEnvReader, defaultServiceUrl, type Env } from "@conveyor/runtime";
import type { LogLimits } from "./jobs/job-logs.js";
import type { SweepSettings } from "./jobs/job-sweeps.js";

/** The builds service's own settings, beyond the common backend ones. */
export interface BuildsConfig {
  readonly logLimits: LogLimits;
  /** A job assigned this long ago and never accepted goes back to the queue. */
  readonly assignTimeoutMs: number;
  /** When the job sweepers act: scheduled job expiry and the grace after a timeout. */
  readonly sweeps: SweepSettings;
  /** Where trigger steps find their target pipelines, and the access and rules that allow them. */
  readonly pipelinesUrl: string;
  readonly identityUrl: string;
  /** Where new jobs find their cluster's queues (creation/cluster-queue-ids.ts). */
  readonly agentsUrl: string;
  /** Builds kept by the read cache (0: no cache, every read goes to the database). */
  readonly readCacheBuilds: number;
}

/**
 * Parses JOB_LOG_MAX_BYTES, JOB_LOG_CHUNK_MAX_BYTES, JOB_ASSIGN_TIMEOUT_S, JOB_SCHEDULED_EXPIRY_S and
 * JOB_TIMEOUT_GRACE_S, PIPELINES_URL, IDENTITY_URL, AGENTS_URL and BUILD_READ_CACHE_SIZE once.
 */
export function readBuildsConfig(env: Env): BuildsConfig {
  const r = createEnvReader(env);
  return Object.freeze({
    logLimits: Object.freeze({
      maxChunkBytes: r.int("JOB_LOG_CHUNK_MAX_BYTES", 1024 * 1024, { min: 1024, max: 16 * 1024 * 1024 }),
      maxLogBytes: r.int("JOB_LOG_MAX_BYTES", 256 * 1024 * 1024, { min: 1024 }),
    }),
    assignTimeoutMs: r.int("JOB_ASSIGN_TIMEOUT_S", 60, { min: 5, max: 3600 }) * 1000,
    sweeps: Object.freeze({
      scheduledExpiryMs: r.int("JOB_SCHEDULED_EXPIRY_S", 24 * 3600, { min: 10, max: 30 * 24 * 3600 }) * 1000,
      timeoutGraceMs: r.int("JOB_TIMEOUT_GRACE_S", 120, { min: 5, max: 3600 }) * 1000,
    }),
    pipelinesUrl: r.url("PIPELINES_URL", defaultServiceUrl("pipelines")),
    identityUrl: r.url("IDENTITY_URL", defaultServiceUrl("identity")),
    agentsUrl: r.url("AGENTS_URL", defaultServiceUrl("agents")),
    readCacheBuilds: r.int("BUILD_READ_CACHE_SIZE", 5_000, { min: 0, max: 1_000_000 }),
  });
}
