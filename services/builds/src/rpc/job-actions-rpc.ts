import type { ServiceImpl } from "@connectrpc/connect";
import { type BuildsService, PipelineUploadState } from "@conveyor/proto/builds";
import { notFound } from "@conveyor/runtime";
import type { BuildsContext } from "../builds-context.js";
import { jobEnvironment } from "../domain/job-env.js";
import type { JobRetries } from "../jobs/job-retries.js";
import type { JobUnblock } from "../jobs/job-unblock.js";
import type { PipelineUpload, UploadStatus } from "../jobs/pipeline-upload.js";
import type { Reconcile } from "../lifecycle/reconcile.js";
import { jobMessage, userSnapshot } from "./build-message.js";

export type JobActionRpcs = Pick<
  ServiceImpl<typeof BuildsService>,
  "retryJob" | "unblockJob" | "getJobEnv" | "uploadPipeline" | "getPipelineUpload"
>;

/** What people and running jobs do to jobs: retry, unblock, read the environment, upload more steps. */
export function createJobActionRpcs(
  ctx: BuildsContext,
  parts: { retries: JobRetries; unblock: JobUnblock; upload: PipelineUpload; reconcile: Reconcile },
): JobActionRpcs {
  const { repo } = ctx;
  return {
    async retryJob(req) {
      const { job } = await parts.retries.retryByHand(
        req.pipelineId,
        req.number,
        req.jobId,
        userSnapshot(req.user),
        parts.reconcile,
      );
      return { job: jobMessage(job) };
    },

    async unblockJob(req) {
      const fields = Object.fromEntries(Object.entries(req.fields).map(([key, value]) => [key, value.values]));
      const job = await parts.unblock.unblock(req.pipelineId, req.number, req.jobId, userSnapshot(req.user), fields, {
        teams: req.callerTeams,
        readOnly: req.readOnly,
      });
      return { job: jobMessage(job) };
    },

    async getJobEnv(req) {
      const build = req.pipelineId !== "" && req.number > 0 ? await repo.findBuild(req.pipelineId, req.number) : null;
      if (!build) throw notFound("build");
      const job = req.jobId === "" ? null : await repo.findJob(req.jobId);
      if (!job || job.buildId !== build.id) throw notFound("job");
      return { env: jobEnvironment(build, job) };
    },

    async uploadPipeline(req) {
      const status = await parts.upload.upload({
        jobId: req.jobId,
        pipeline: req.pipeline,
        uuid: req.uuid,
        replace: req.replace,
        asynchronous: req.asynchronous,
      });
      return { jobsAdded: status.jobsAdded, status: uploadStatusMessage(status) };
    },

    async getPipelineUpload(req) {
      return { status: uploadStatusMessage(await parts.upload.status(req.jobId, req.uuid)) };
    },
  };
}

const UPLOAD_STATES: Record<UploadStatus["state"], PipelineUploadState> = {
  pending: PipelineUploadState.PENDING,
  processing: PipelineUploadState.PROCESSING,
  applied: PipelineUploadState.APPLIED,
  rejected: PipelineUploadState.REJECTED,
};

/** An upload's status as the RPCs answer it. */
function uploadStatusMessage(status: UploadStatus) {
  return { state: UPLOAD_STATES[status.state], jobsAdded: status.jobsAdded, message: status.message };
}
