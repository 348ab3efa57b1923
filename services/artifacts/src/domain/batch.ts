import { createHash } from "node:crypto";
import { pathProblem } from "./artifact-path.js";

/** The most artifacts one batch may announce (the agent sends 30 at a time). */
export const MAX_BATCH_SIZE = 100;
/** The largest artifact, as the agent assumes for its form uploads: 5 GiB. */
export const MAX_FILE_SIZE = 5 * 1024 ** 3;
/** The longest content type and glob kept. */
const MAX_CONTENT_TYPE_LENGTH = 255;
const MAX_GLOB_PATH_LENGTH = 1024;

/** One artifact as a batch announces it. */
export interface AnnouncedArtifact {
  path: string;
  fileSize: number;
  sha1sum: string;
  sha256sum: string;
  contentType: string;
  globPath: string;
}

export interface FieldProblem {
  field: string;
  code: string;
}

/** Every problem of a batch's artifacts, as field errors (`artifacts.<index>.<field>`); empty when it is fine. */
export function batchProblems(artifacts: readonly AnnouncedArtifact[]): FieldProblem[] {
  if (artifacts.length === 0) return [{ field: "artifacts", code: "can't be blank" }];
  if (artifacts.length > MAX_BATCH_SIZE) {
    return [{ field: "artifacts", code: `has more than ${MAX_BATCH_SIZE} artifacts` }];
  }
  const problems: FieldProblem[] = [];
  artifacts.forEach((a, i) => {
    const at = (field: string, code: string) => problems.push({ field: `artifacts.${i}.${field}`, code });
    const path = pathProblem(a.path);
    if (path) at("path", path);
    if (!Number.isSafeInteger(a.fileSize) || a.fileSize < 0) at("file_size", "must be a whole number of bytes");
    else if (a.fileSize > MAX_FILE_SIZE) at("file_size", "is larger than 5 GiB, the most an artifact may be");
    if (!/^[0-9a-f]{40}$/i.test(a.sha1sum)) at("sha1sum", "must be 40 hexadecimal digits");
    if (a.sha256sum !== "" && !/^[0-9a-f]{64}$/i.test(a.sha256sum)) at("sha256sum", "must be 64 hexadecimal digits");
    if (a.contentType.length > MAX_CONTENT_TYPE_LENGTH || /[\r\n]/.test(a.contentType)) {
      at("content_type", "is invalid");
    }
    if (a.globPath.length > MAX_GLOB_PATH_LENGTH) at("glob_path", "is too long");
  });
  return problems;
}

/**
 * The ids of a batch's artifacts, derived from the job, the agent's batch id and each artifact's position (name-based
 * UUIDs, version 5 layout): a repeated batch names the same records, so a retry after a lost answer or a crash
 * half-way through the insert finds what the first attempt stored instead of creating doubles.
 */
export function batchArtifactIds(jobId: string, batchId: string, count: number): string[] {
  return Array.from({ length: count }, (_, index) => {
    const bytes = createHash("sha1").update(`conveyor-artifact\0${jobId}\0${batchId}\0${index}`).digest();
    bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50;
    bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
    const hex = bytes.subarray(0, 16).toString("hex");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  });
}

/** The content type stored for an artifact: the agent's, or application/octet-stream. */
export function mimeTypeOf(contentType: string): string {
  return contentType.trim() === "" ? "application/octet-stream" : contentType.trim();
}

/**
 * The object key of an artifact in the bucket: ids only, so no user-chosen path ever reaches the store, and a random
 * part drawn when the record is made, so a key is never used for two records (an upload form signed for one artifact
 * can never write another's bytes, whatever ids a batch repeats).
 */
export function objectKeyOf(ids: { buildId: string; jobId: string; artifactId: string }, nonce: string): string {
  return `artifacts/${ids.buildId}/${ids.jobId}/${ids.artifactId}/${nonce}`;
}
