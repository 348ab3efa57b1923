import { failedPrecondition, notFound } from "@conveyor/runtime";
import type { Job } from "../domain/job.js";
import { RUNNING_JOB_STATES } from "../domain/state-sets.js";
import type { BuildRepository } from "../store/build-repository-contract.js";

/**
 * The job an agent writes through (its log, header times, the build meta-data and annotations it sets), read from
 * the database, never from a cache: only while its process is (or may be) on an agent (`RUNNING_JOB_STATES`). A
 * finished job never changes again, whoever asks (docs/security.md, "Finished means immutable"): its job token is
 * revoked when it finishes, and this refuses the agent's own access token too, and any credential cached before.
 * With `buildId`, the job must belong to that build. NotFound when there is no such job (or it is of another build),
 * FailedPrecondition when it is not running.
 */
export async function requireRunningJob(
  repo: Pick<BuildRepository, "findJob">,
  jobId: string,
  buildId?: string,
): Promise<Job> {
  const job = jobId === "" ? null : await repo.findJob(jobId);
  if (!job || (buildId !== undefined && job.buildId !== buildId)) throw notFound("job");
  if (!RUNNING_JOB_STATES.includes(job.state)) throw notRunning(job);
  return job;
}

/** The refusal of a write through a job that is not running. */
export function notRunning(job: Pick<Job, "state">) {
  return failedPrecondition(
    `The job is ${job.state}: only a running job's agent may change its log, header times, meta-data, annotations or artifacts`,
  );
}
