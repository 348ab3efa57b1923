/**
 * The build page's own paths: a job's anchor on its build's page, its base path, its log. The pages' other paths
 * (a build's, a pipeline's, an agent's) are in web/paths.ts.
 */
import { buildPath } from "../paths.js";

const seg = encodeURIComponent;

/** A job's place on its build's page (the job row's id). */
export function jobAnchorPath(org: string, pipeline: string, number: number, jobId: string): string {
  return `${buildPath(org, pipeline, number)}#${seg(jobId)}`;
}

/** A job's path under its build: `…/builds/{number}/jobs/{id}`, the base of its log and actions. */
export function jobPath(org: string, pipeline: string, number: number, jobId: string): string {
  return `${buildPath(org, pipeline, number)}/jobs/${seg(jobId)}`;
}

/** A job's log page (the tail first; `?all=1` the whole log); `.txt` after it, the raw log. */
export function jobLogPath(org: string, pipeline: string, number: number, jobId: string): string {
  return `${jobPath(org, pipeline, number, jobId)}/log`;
}
