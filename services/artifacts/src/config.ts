import { createEnvReader, DEFAULT_S3_ENDPOINT, type Env } from "@conveyor/runtime";

/** The artifacts service's S3 settings. */
export interface S3Config {
  readonly endpoint: string;
  readonly accessKey: string;
  readonly secretKey: string;
  readonly bucket: string;
  readonly region: string;
}

/** Parses S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_BUCKET and S3_REGION once. */
export function readS3Config(env: Env): S3Config {
  const r = createEnvReader(env);
  return Object.freeze({
    endpoint: r.url("S3_ENDPOINT", DEFAULT_S3_ENDPOINT),
    accessKey: r.string("S3_ACCESS_KEY", "conveyor"),
    secretKey: r.string("S3_SECRET_KEY", "conveyor-secret"),
    bucket: r.string("S3_BUCKET", "conveyor-artifacts"),
    region: r.string("S3_REGION", "us-east-1"),
  });
}
