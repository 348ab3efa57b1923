import { Code, ConnectError } from "@connectrpc/connect";
import { mayUnblock, type SubmittedFields, type Unblocker, unblockValues } from "@conveyor/ci-rules";
import { failedPrecondition, invalidFields, notFound, permissionDenied } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import type { UserSnapshot } from "../domain/build.js";
import type { Job } from "../domain/job.js";
import { stampsFor } from "../domain/job-stamps.js";
import { applyJobEvent } from "../domain/state-machine.js";
import { CANCELED_BUILD_STATES } from "../domain/state-sets.js";
import type { Reconcile } from "../lifecycle/reconcile.js";
import type { BuildMetaData } from "../meta-data/build-meta-data.js";

/** The most field keys one unblock may submit. */
const MAX_SUBMITTED_FIELDS = 100;

/**
 * Unblocking block and input jobs (`PUT …/jobs/{id}/unblock`, docs/compatibility.md#build-states). The submitted
 * values are checked against the step's fields; the job is unblocked with a compare-and-set on its state that also
 * records the meta-data the values make, so one unblock wins whichever process makes it and only the winner's values
 * count. The meta-data is stored by `storeUnblockFields`, which every reconcile runs before it releases the jobs
 * behind the block (and which finishes the work of a process that died in between), so those jobs read the values
 * from their first moment.
 */
export function createJobUnblock(ctx: BuildsContext, reconcile: Reconcile, metaData: BuildMetaData) {
  const { repo, withLock, now } = ctx;

  return {
    async unblock(
      pipelineId: string,
      number: number,
      jobId: string,
      by: UserSnapshot | null,
      submitted: SubmittedFields,
      caller: Unblocker,
    ): Promise<Job> {
      const found = pipelineId !== "" && number > 0 ? await repo.findBuild(pipelineId, number) : null;
      if (!found) throw notFound("build");
      if (Object.keys(submitted).length > MAX_SUBMITTED_FIELDS)
        throw invalidFields([{ field: "fields", code: `has more than ${MAX_SUBMITTED_FIELDS} keys` }]);
      return withLock(found.id, async () => {
        for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
          const [build, job] = await Promise.all([repo.findBuildById(found.id), repo.findJob(jobId)]);
          if (!build) throw notFound("build");
          if (!job || job.buildId !== build.id) throw notFound("job");
          // Who may act comes first: a caller who may only read learns no more about a job than that.
          if (!mayUnblock(job.step.type === "manual" ? job.step.allowed_teams : undefined, caller))
            throw permissionDenied(
              "Only members of the step's allowed_teams, or callers who may build, may unblock it",
            );
          if (job.type !== "manual") throw failedPrecondition("Only block and input jobs can be unblocked");
          if (build.cancelRequested || CANCELED_BUILD_STATES.includes(build.state))
            throw failedPrecondition("Jobs from canceled builds cannot be unblocked");
          if (job.state === "unblocked") throw failedPrecondition("This job has already been unblocked");
          if (job.state !== "blocked")
            throw failedPrecondition(`Only blocked jobs can be unblocked; this one is ${job.state.replace("_", " ")}`);
          const fields = job.step.type === "manual" ? (job.step.fields ?? []) : [];
          const values = unblockValues(fields, submitted);
          if (!values.ok) throw invalidFields(values.errors);
          const result = applyJobEvent(job, { type: "unblock" });
          if (!result.ok) throw failedPrecondition(result.reason);
          await ctx.markCounts(job.pipelineId);
          const updated = await ctx.stateEvents.changeJob(job, {
            state: result.job.state,
            ...stampsFor(job, result.job.state, now()),
            unblockedBy: by,
            unblockFields: Object.keys(values.metaData).length > 0 ? values.metaData : null,
          });
          if (!updated) continue;
          ctx.logger.info({ jobId: job.id, buildId: build.id, fields: Object.keys(values.metaData) }, "job unblocked");
          const { jobs } = await reconcile(build.id);
          ctx.publishCounts(job.pipelineId);
          return jobs.find((j) => j.id === job.id) ?? updated;
        }
        throw new Error(`job ${jobId} kept changing under ${MAX_ATTEMPTS} attempts`);
      });
    },

    /**
     * Stores the meta-data of unblocked jobs whose values are not stored yet, then clears them from the job.
     * Whether anything changed. The caller holds the build's lock (reconcile's finishInterrupted hook).
     */
    async storeUnblockFields(jobs: readonly Job[]): Promise<boolean> {
      let stored = false;
      for (const job of jobs) {
        if (job.state !== "unblocked" || !job.unblockFields) continue;
        const items = Object.entries(job.unblockFields).map(([key, value]) => ({ key, value }));
        try {
          await metaData.setLocked(job.buildId, items);
        } catch (err) {
          // Values that no longer fit the build's meta-data (it filled up meanwhile) must not wedge the build.
          if (ConnectError.from(err).code !== Code.InvalidArgument) throw err;
          ctx.logger.warn({ err, jobId: job.id }, "an unblock's fields did not fit the build's meta-data");
        }
        if (await repo.updateJob(job.id, "unblocked", { unblockFields: null })) stored = true;
      }
      return stored;
    },
  };
}

export type JobUnblock = ReturnType<typeof createJobUnblock>;
