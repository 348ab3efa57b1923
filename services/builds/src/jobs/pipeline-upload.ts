import { parsePipelineYaml } from "@conveyor/ci-rules";
import { failedPrecondition, invalidFields, newId, notFound } from "@conveyor/runtime";
import type { BuildsContext } from "../builds-context.js";
import { conditionContext } from "../domain/build.js";
import { type Job, storedJob } from "../domain/job.js";
import { keysOf, planUpload } from "../domain/pipeline-upload.js";
import type { Reconcile } from "../lifecycle/reconcile.js";
import type { PipelineUploadRepository, UploadRecord } from "../store/pipeline-upload-repository.js";
import { addUploadedNotify, uploadedNotifyProblem } from "./uploaded-notify.js";

/** The largest pipeline an upload may send, as JSON or YAML text. */
export const MAX_UPLOAD_BYTES = 1024 * 1024;

/** The longest upload uuid accepted (the agent sends a UUID). */
const MAX_UUID_LENGTH = 64;

/** What a running job sends to add steps to its build. */
export interface UploadRequest {
  jobId: string;
  /** The pipeline, YAML or JSON text. */
  pipeline: string;
  uuid: string;
  replace: boolean;
}

/**
 * `buildkite-agent pipeline upload` (docs/compatibility.md#pipeline-upload). An upload is planned once and its plan
 * stored under its uuid before anything changes; then the plan is applied (each step idempotent) and the upload marked
 * applied. The agent retries an upload whose answer it did not get with the same uuid: an applied upload answers the
 * same again, and one a crash interrupted is applied from its stored plan, so no upload is half applied for good.
 */
export function createPipelineUpload(ctx: BuildsContext, reconcile: Reconcile, uploads: PipelineUploadRepository) {
  const { repo, withLock, now } = ctx;

  /** Plans a new upload from the build as it is now. */
  const plan = async (uploader: Job, req: UploadRequest, id: string): Promise<UploadRecord> => {
    const build = await repo.findBuildById(uploader.buildId);
    if (!build) throw notFound("build");
    if (build.cancelRequested || build.finishedAt)
      throw failedPrecondition("Steps cannot be uploaded to a build that was canceled or has finished");
    const jobs = await repo.jobsOf([build.id]);
    const parsed = parsePipelineYaml(req.pipeline, { existingKeys: [...keysOf(jobs).keys()], uploaded: true });
    if (!parsed.ok)
      throw invalidFields(
        parsed.errors.map((e) => ({ field: e.field.replace(/^configuration/, "pipeline"), code: e.code })),
      );
    const planned = planUpload({
      uploader,
      jobs,
      steps: parsed.steps,
      env: parsed.env,
      context: conditionContext(build),
      timeouts: build.pipeline.timeouts,
      replace: req.replace,
      newId,
    });
    if (!planned.ok) throw invalidFields([{ field: "pipeline", code: planned.problem }]);
    const notify = parsed.notify ?? [];
    const notifyProblem = uploadedNotifyProblem(build, notify);
    if (notifyProblem) throw invalidFields([{ field: "pipeline.notify", code: notifyProblem }]);
    const stepIdsByPosition = new Map<number, string>();
    const stepIds = planned.plan.jobs.map((job) => {
      const known = stepIdsByPosition.get(job.stepPosition) ?? newId();
      stepIdsByPosition.set(job.stepPosition, known);
      return known;
    });
    return {
      id,
      buildId: build.id,
      jobId: uploader.id,
      state: "processing",
      plan: planned.plan,
      stepIds,
      jobsAdded: planned.plan.jobs.length,
      createdAt: now(),
      ...(notify.length > 0 ? { notify } : {}),
    };
  };

  /** Applies a stored plan; every step is safe to repeat. */
  const apply = async (record: UploadRecord, uploader: Job) => {
    const { plan } = record;
    if (!plan) return;
    for (const { id, state } of plan.remove) await repo.deleteJob(id, state);
    await repo.setStepPositions(plan.renumber);
    const jobs = plan.jobs.map((p, i) =>
      storedJob(
        p,
        {
          buildId: uploader.buildId,
          organizationId: uploader.organizationId,
          pipelineId: uploader.pipelineId,
          buildNumber: uploader.buildNumber,
          clusterId: uploader.clusterId,
          stepId: record.stepIds[i] ?? newId(),
        },
        new Date(record.createdAt),
      ),
    );
    // New jobs first: a job told to wait for them must find them.
    await repo.insertMissingJobs(jobs);
    for (const { id, dependsOn } of plan.waitFor) await repo.addDependencies(id, dependsOn);
    if (record.notify?.length) await addUploadedNotify(ctx, uploader.buildId, record.id, record.notify);
  };

  return async function upload(req: UploadRequest): Promise<number> {
    const problems = [];
    if (req.uuid === "" || req.uuid.length > MAX_UUID_LENGTH)
      problems.push({ field: "uuid", code: `must be 1 to ${MAX_UUID_LENGTH} characters` });
    if (Buffer.byteLength(req.pipeline) > MAX_UPLOAD_BYTES)
      problems.push({ field: "pipeline", code: `is too large (maximum is ${MAX_UPLOAD_BYTES} bytes)` });
    if (problems.length > 0) throw invalidFields(problems);
    const found = req.jobId === "" ? null : await repo.findJob(req.jobId);
    if (!found) throw notFound("job");
    return withLock(found.buildId, async () => {
      const id = `${found.buildId}:${req.uuid}`;
      let record = await uploads.find(id);
      if (record?.state === "applied") return record.jobsAdded;
      const uploader = await repo.findJob(req.jobId);
      if (!uploader) throw notFound("job");
      if (!record) {
        if (uploader.state !== "running") throw failedPrecondition("Only a running job can upload steps");
        const planned = await plan(uploader, req, id);
        record = (await uploads.insert(planned)) ? planned : await uploads.find(id);
        if (!record) throw new Error(`pipeline upload ${id} vanished`);
        if (record.state === "applied") return record.jobsAdded;
      }
      await apply(record, uploader);
      await uploads.markApplied(id);
      ctx.logger.info(
        { jobId: uploader.id, buildId: uploader.buildId, uuid: req.uuid, jobs: record.jobsAdded },
        "pipeline uploaded",
      );
      await reconcile(uploader.buildId);
      return record.jobsAdded;
    });
  };
}

export type PipelineUpload = ReturnType<typeof createPipelineUpload>;
