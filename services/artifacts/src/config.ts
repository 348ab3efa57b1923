import { createEnvReader, DEFAULT_S3_ENDPOINT, type Env } from "@conveyor/runtime";
import { MAX_RETENTION_DAYS } from "./domain/retention.js";

/** The artifacts service's S3 settings. */
export interface S3Config {
  readonly endpoint: string;
  readonly accessKey: string;
  readonly secretKey: string;
  readonly bucket: string;
  readonly region: string;
}

/** The artifacts service's own limits and timings. */
export interface ArtifactsConfig {
  readonly s3: S3Config;
  /** Days an artifact is kept when its organization chose no retention. */
  readonly defaultRetentionDays: number;
  /** The most artifacts one job may create (more is 403, as Buildkite's quota). */
  readonly maxArtifactsPerJob: number;
  /** The most artifacts all the jobs of one build may create together (more is 403 too). */
  readonly maxArtifactsPerBuild: number;
  /** How long an upload form stays valid. */
  readonly uploadTtlS: number;
  /** An artifact still new this long after its creation was abandoned: a sweep marks it error. */
  readonly abandonAfterS: number;
  /** How long a signed download URL stays valid (60 s, as the spec says). */
  readonly downloadTtlS: number;
  readonly sweepIntervalMs: number;
  /** The most records one sweep step handles before it looks again. */
  readonly sweepBatch: number;
}

/** Parses S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_BUCKET and S3_REGION once. */
function readS3Config(env: Env): S3Config {
  const r = createEnvReader(env);
  return Object.freeze({
    endpoint: r.url("S3_ENDPOINT", DEFAULT_S3_ENDPOINT),
    accessKey: r.string("S3_ACCESS_KEY", "conveyor"),
    secretKey: r.string("S3_SECRET_KEY", "conveyor-secret"),
    bucket: r.string("S3_BUCKET", "conveyor-artifacts"),
    region: r.string("S3_REGION", "us-east-1"),
  });
}

/**
 * Parses the S3 settings and ARTIFACT_RETENTION_DAYS, ARTIFACTS_MAX_PER_JOB, ARTIFACTS_MAX_PER_BUILD, ARTIFACT_UPLOAD_TTL_S,
 * ARTIFACT_ABANDON_AFTER_S, ARTIFACT_DOWNLOAD_TTL_S, ARTIFACTS_SWEEP_INTERVAL_S and ARTIFACTS_SWEEP_BATCH.
 */
export function readArtifactsConfig(env: Env): ArtifactsConfig {
  const r = createEnvReader(env);
  const uploadTtlS = r.int("ARTIFACT_UPLOAD_TTL_S", 3600, { min: 60, max: 7 * 24 * 3600 });
  return Object.freeze({
    s3: readS3Config(env),
    defaultRetentionDays: r.int("ARTIFACT_RETENTION_DAYS", 180, { min: 1, max: MAX_RETENTION_DAYS }),
    maxArtifactsPerJob: r.int("ARTIFACTS_MAX_PER_JOB", 10_000, { min: 1, max: 1_000_000 }),
    maxArtifactsPerBuild: r.int("ARTIFACTS_MAX_PER_BUILD", 100_000, { min: 1, max: 10_000_000 }),
    uploadTtlS,
    // Never before the upload forms expire: an upload still allowed must not find its record already failed.
    abandonAfterS: r.int("ARTIFACT_ABANDON_AFTER_S", 24 * 3600, { min: uploadTtlS }),
    downloadTtlS: r.int("ARTIFACT_DOWNLOAD_TTL_S", 60, { min: 1, max: 3600 }),
    sweepIntervalMs: r.int("ARTIFACTS_SWEEP_INTERVAL_S", 60, { min: 1, max: 86_400 }) * 1000,
    sweepBatch: r.int("ARTIFACTS_SWEEP_BATCH", 500, { min: 1, max: 1000 }),
  });
}
