import { Client } from "minio";
import type { S3Config } from "./config.js";

/** The S3 bucket that holds artifact contents. */
export interface ObjectStore {
  readonly bucket: string;
  /** Creates the bucket when it does not exist yet. */
  ensureBucket(): Promise<void>;
}

/** An S3 object store over the minio client (any S3-compatible server works). */
export function createS3ObjectStore(config: S3Config): ObjectStore {
  const url = new URL(config.endpoint);
  const client = new Client({
    endPoint: url.hostname,
    port: Number(url.port || (url.protocol === "https:" ? 443 : 80)),
    useSSL: url.protocol === "https:",
    accessKey: config.accessKey,
    secretKey: config.secretKey,
    region: config.region,
    pathStyle: true,
  });
  return {
    bucket: config.bucket,
    async ensureBucket() {
      if (!(await client.bucketExists(config.bucket))) await client.makeBucket(config.bucket, config.region);
    },
  };
}
