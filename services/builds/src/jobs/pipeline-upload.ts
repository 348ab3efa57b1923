import { Code, ConnectError } from "@connectrpc/connect";
import { parsePipelineYaml } from "@conveyor/ci-rules";
import { describeFieldErrors, failedPrecondition, invalidFields, newId, notFound } from "@conveyor/runtime";
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
    // One read of the cluster's queues for all the new jobs (creation/cluster-queue-ids.ts).
    const queueIds = await ctx.clusterQueues.of(uploader.organizationId, uploader.clusterId);
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
        queueIds,
      ),
    );
    // New jobs first: a job told to wait for them must find them.
    await repo.insertMissingJobs(jobs);
    for (const { id, dependsOn } of plan.waitFor) await repo.addDependencies(id, dependsOn);
    if (record.notify?.length) await addUploadedNotify(ctx, uploader.buildId, record.id, record.notify);
  };

  /** An upload's id: the agent sends the same uuid when it retries. */
  const uploadId = (buildId: string, uuid: string) => `${buildId}:${uuid}`;

  /** Applies a planned upload (its plan stored), marks it applied and reconciles the build. Under the build's lock. */
  const applyPlanned = async (record: UploadRecord, uploader: Job) => {
    await apply(record, uploader);
    await uploads.markApplied(record.id);
    ctx.logger.info(
      { jobId: uploader.id, buildId: uploader.buildId, uploadId: record.id, jobs: record.jobsAdded },
      "pipeline uploaded",
    );
    await reconcile(uploader.buildId);
  };

  /**
   * Takes a stored upload as far as it goes: plans a pending one from the build as it is now (a pipeline that cannot
   * be used makes it rejected, saying why) and applies it. Safe to repeat, from any replica, after any crash.
   */
  const complete = (buildId: string, id: string): Promise<UploadRecord | null> =>
    withLock(buildId, async () => {
      const record = await uploads.find(id);
      if (!record || record.state === "applied" || record.state === "rejected") return record;
      const uploader = await repo.findJob(record.jobId);
      if (!uploader) throw notFound("job");
      let planned = record;
      if (record.state === "pending") {
        const request = record.request;
        if (!request) throw new Error(`pipeline upload ${id} is pending without its request`);
        try {
          planned = await plan(uploader, { jobId: uploader.id, uuid: id, ...request }, id);
        } catch (err) {
          const error = ConnectError.from(err);
          if (!REFUSALS.has(error.code)) throw err;
          const message = `The pipeline could not be uploaded: ${describeFieldErrors(error)}`;
          if (await uploads.markRejected(id, message)) return { ...record, state: "rejected", message };
          return uploads.find(id);
        }
        if (!(await uploads.markPlanned(planned))) {
          // Another replica planned it first: apply the plan it stored (applying is safe to repeat, planning twice
          // would make two sets of jobs).
          const stored = await uploads.find(id);
          if (stored?.state !== "processing") return stored;
          planned = stored;
        }
      }
      await applyPlanned(planned, uploader);
      return { ...planned, state: "applied", plan: null };
    });

  /** Uploads being completed in the background by this process, by id (one at a time each). */
  const completing = new Map<string, Promise<unknown>>();
  const completeInBackground = (buildId: string, id: string) => {
    if (completing.has(id)) return;
    const work = complete(buildId, id)
      .catch((err: unknown) =>
        ctx.logger.warn({ err, uploadId: id }, "pipeline upload not completed yet: taken up again when it is polled"),
      )
      .finally(() => completing.delete(id));
    completing.set(id, work);
  };

  /** Checks what every upload must be, and finds the uploading job. */
  const uploaderOf = async (req: UploadRequest): Promise<Job> => {
    const problems = [];
    if (req.uuid === "" || req.uuid.length > MAX_UUID_LENGTH)
      problems.push({ field: "uuid", code: `must be 1 to ${MAX_UUID_LENGTH} characters` });
    if (Buffer.byteLength(req.pipeline) > MAX_UPLOAD_BYTES)
      problems.push({ field: "pipeline", code: `is too large (maximum is ${MAX_UPLOAD_BYTES} bytes)` });
    if (problems.length > 0) throw invalidFields(problems);
    const found = req.jobId === "" ? null : await repo.findJob(req.jobId);
    if (!found) throw notFound("job");
    return found;
  };

  /** Applied before it answers: the upload's jobs, or the 422 of a pipeline that cannot be used. */
  async function uploadNow(req: UploadRequest): Promise<UploadStatus> {
    const found = await uploaderOf(req);
    const id = uploadId(found.buildId, req.uuid);
    const done = await withLock(found.buildId, async () => {
      let record = await uploads.find(id);
      if (record?.state === "applied" || record?.state === "rejected") return record;
      // Sent asynchronously before, not yet planned: completed below like any pending upload.
      if (record?.state === "pending") return null;
      const uploader = await repo.findJob(req.jobId);
      if (!uploader) throw notFound("job");
      if (!record) {
        if (uploader.state !== "running") throw failedPrecondition("Only a running job can upload steps");
        const planned = await plan(uploader, req, id);
        record = (await uploads.insert(planned)) ? planned : await uploads.find(id);
        if (!record) throw new Error(`pipeline upload ${id} vanished`);
        if (record.state !== "processing") return record;
      }
      await applyPlanned(record, uploader);
      return { ...record, state: "applied" as const };
    });
    const record = done ?? (await complete(found.buildId, id));
    if (!record) throw notFound("pipeline upload");
    if (record.state === "rejected") throw failedPrecondition(record.message ?? "The pipeline could not be uploaded");
    return statusOf(record);
  }

  /**
   * Stored durably and answered at once (the agent's `?async=true`): the upload is planned and applied after the
   * answer, and `status` says how it went. Nothing is checked against the build before the answer but that the job
   * runs: a pipeline that cannot be used comes back as `rejected`, with the message the 422 would have had.
   */
  async function uploadLater(req: UploadRequest): Promise<UploadStatus> {
    const found = await uploaderOf(req);
    const id = uploadId(found.buildId, req.uuid);
    const record = await withLock(found.buildId, async () => {
      const known = await uploads.find(id);
      if (known) return known;
      const uploader = await repo.findJob(req.jobId);
      if (!uploader) throw notFound("job");
      if (uploader.state !== "running") throw failedPrecondition("Only a running job can upload steps");
      const pending: UploadRecord = {
        id,
        buildId: found.buildId,
        jobId: uploader.id,
        state: "pending",
        plan: null,
        stepIds: [],
        jobsAdded: 0,
        createdAt: now(),
        request: { pipeline: req.pipeline, replace: req.replace },
      };
      return (await uploads.insert(pending)) ? pending : await uploads.find(id);
    });
    if (!record) throw new Error(`pipeline upload ${id} vanished`);
    if (record.state === "pending" || record.state === "processing") completeInBackground(found.buildId, id);
    return statusOf(record);
  }

  return {
    /** `buildkite-agent pipeline upload` (docs/compatibility.md#pipeline-upload): now, or stored and applied after. */
    upload(req: UploadRequest & { asynchronous?: boolean }): Promise<UploadStatus> {
      return req.asynchronous ? uploadLater(req) : uploadNow(req);
    },

    /** Where an upload stands. One not finished and not being completed here (a crash) is taken up again. */
    async status(jobId: string, uuid: string): Promise<UploadStatus> {
      const job = jobId === "" || uuid === "" ? null : await repo.findJob(jobId);
      if (!job) throw notFound("job");
      const id = uploadId(job.buildId, uuid);
      const record = await uploads.find(id);
      if (!record || record.jobId !== job.id) throw notFound("pipeline upload");
      if (record.state === "pending" || record.state === "processing") completeInBackground(job.buildId, id);
      return statusOf(record);
    },

    /**
     * Completes the uploads a crash left unfinished (a supervised duty: an agent that stopped polling must not lose
     * an upload it was told was accepted): those stored more than `olderThanMs` ago, at most `limit`, oldest first.
     */
    async completeUnfinished(olderThanMs = 30_000, limit = 100): Promise<number> {
      const unfinished = await uploads.unfinished(new Date(now().getTime() - olderThanMs), limit);
      for (const record of unfinished) {
        try {
          await complete(record.buildId, record.id);
        } catch (err) {
          // Left as it is: the agent's next poll, or the next start, takes it up again.
          ctx.logger.warn({ err, uploadId: record.id }, "unfinished pipeline upload not completed");
        }
      }
      return unfinished.length;
    },
  };
}

/** What an upload has come to, as the RPC answers it. */
export interface UploadStatus {
  state: UploadRecord["state"];
  jobsAdded: number;
  message: string;
}

function statusOf(record: UploadRecord): UploadStatus {
  return { state: record.state, jobsAdded: record.jobsAdded, message: record.message ?? "" };
}

/** The errors that mean the pipeline cannot be used (a rejection), not that something failed on the way. */
const REFUSALS: ReadonlySet<Code> = new Set([Code.InvalidArgument, Code.FailedPrecondition, Code.NotFound]);

export type PipelineUpload = ReturnType<typeof createPipelineUpload>;
