import type { Artifact } from "@conveyor/proto/artifacts";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { Int, NullableStr, NullableTimestamp, Str } from "./schemas.js";
import type { Urls } from "./urls.js";

/** Where a build's artifacts are, for their `url` and `download_url`. */
export interface ArtifactPlace {
  orgSlug: string;
  pipelineSlug: string;
  buildNumber: number;
}

/** The directory part of a path ("." for a file at the top). */
export function dirnameOf(path: string): string {
  const at = path.lastIndexOf("/");
  return at <= 0 ? "." : path.slice(0, at);
}

/** The file name part of a path. */
export function filenameOf(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** The REST Artifact (docs/compatibility.md#artifact-operations; go-buildkite's Artifact decodes it). */
export const ArtifactSchema = Type.Object({
  id: Str,
  job_id: Str,
  url: Str,
  download_url: Str,
  state: Str,
  path: Str,
  dirname: Str,
  filename: Str,
  mime_type: Str,
  file_size: Int,
  sha1sum: Str,
  glob_path: NullableStr,
  original_path: NullableStr,
});
export type ArtifactBody = Static<typeof ArtifactSchema>;

/** The canonical API URL of an artifact. */
export function artifactUrl(urls: Urls, place: ArtifactPlace, jobId: string, id: string): string {
  return urls.api(
    `organizations/${place.orgSlug}/pipelines/${place.pipelineSlug}/builds/${place.buildNumber}/jobs/${jobId}/artifacts/${id}`,
  );
}

/** An artifact as the REST API renders it. */
export function renderArtifact(a: Artifact, urls: Urls, place: ArtifactPlace): ArtifactBody {
  const url = artifactUrl(urls, place, a.jobId, a.id);
  return {
    id: a.id,
    job_id: a.jobId,
    url,
    download_url: `${url}/download`,
    state: a.state,
    path: a.path,
    dirname: dirnameOf(a.path),
    filename: filenameOf(a.path),
    mime_type: a.mimeType,
    file_size: Number(a.fileSize),
    sha1sum: a.sha1sum,
    // Deprecated by Buildkite, always null.
    glob_path: null,
    original_path: null,
  };
}

/**
 * The agent's Artifact (docs/compatibility.md#artifacts, the agent's api.Artifact): what `artifact download`, `search` and
 * `shasum` decode. `url` is the signed download URL, fetched without credentials; `created_at` must be RFC 3339.
 */
export const AgentArtifactSchema = Type.Object({
  id: Str,
  job_id: Str,
  path: Str,
  absolute_path: Str,
  glob_path: Str,
  file_size: Int,
  sha1sum: Str,
  sha256sum: Str,
  url: Str,
  upload_destination: Str,
  state: Str,
  mime_type: Str,
  dirname: Str,
  filename: Str,
  created_at: NullableTimestamp,
});
export type AgentArtifactBody = Static<typeof AgentArtifactSchema>;

/** An artifact with its signed URL as the agent decodes it. */
export function renderAgentArtifact(a: Artifact, url: string): AgentArtifactBody {
  return {
    id: a.id,
    job_id: a.jobId,
    path: a.path,
    absolute_path: "",
    glob_path: a.globPath,
    file_size: Number(a.fileSize),
    sha1sum: a.sha1sum,
    sha256sum: a.sha256sum,
    url,
    upload_destination: "",
    state: a.state,
    mime_type: a.mimeType,
    dirname: dirnameOf(a.path),
    filename: filenameOf(a.path),
    created_at: isoTime(a.createdAt),
  };
}
