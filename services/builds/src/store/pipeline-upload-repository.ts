import type { NotifyRule } from "@conveyor/ci-rules";
import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";
import type { UploadPlan } from "../domain/pipeline-upload.js";

/** One pipeline upload of a build, by the upload's uuid: what it adds, then that it was applied. */
export interface UploadRecord {
  /** `{buildId}:{uuid}`: the agent sends the same uuid when it retries an upload. */
  id: string;
  buildId: string;
  jobId: string;
  /**
   * pending: stored as sent (an asynchronous upload), not yet planned; processing: planned, being applied; applied;
   * rejected: the pipeline could not be used (`message` says why).
   */
  state: "pending" | "processing" | "applied" | "rejected";
  /** What the upload changes, kept until it is applied so that a replay after a crash applies the same. */
  plan: UploadPlan | null;
  /** The step id of each of the plan's jobs (parallel jobs of a step share one). */
  stepIds: string[];
  jobsAdded: number;
  createdAt: Date;
  /** A pending upload's request, kept until it is planned. */
  request?: { pipeline: string; replace: boolean };
  /** Why a rejected upload was refused. */
  message?: string;
  /** The uploaded pipeline's build-level `notify:`, added to the build when the plan is applied; absent when none. */
  notify?: NotifyRule[];
}

/** Persistence of pipeline uploads (idempotence and crash recovery). */
export interface PipelineUploadRepository {
  find(id: string): Promise<UploadRecord | null>;
  /** Stores a new upload; false when one with the same id exists. */
  insert(record: UploadRecord): Promise<boolean>;
  /** Marks an upload applied and drops its plan. */
  markApplied(id: string): Promise<void>;
  /** Stores the plan of a pending upload (it becomes processing) and drops its request; false if it was not pending. */
  markPlanned(record: UploadRecord): Promise<boolean>;
  /** Marks a pending upload rejected, saying why, and drops its request; false if it was not pending. */
  markRejected(id: string, message: string): Promise<boolean>;
  /** Uploads neither applied nor rejected, stored before `before` (a crash interrupted them), oldest first. */
  unfinished(before: Date, limit: number): Promise<UploadRecord[]>;
  /** Removes the upload records of these builds (their pipeline was deleted). */
  removeOfBuilds(buildIds: readonly string[]): Promise<void>;
}

type UploadDoc = Omit<UploadRecord, "id" | "plan"> & { _id: string; planJson: string | null };

/**
 * A stored plan as JSON. A plan stored before jobs had a stepPosition names it stepIndex (in its jobs and its
 * renumbering); one left unapplied by a crash across an upgrade is read with the name it has now.
 */
function parsePlan(json: string): UploadPlan {
  const plan = JSON.parse(json) as UploadPlan;
  const positioned = <T extends { stepPosition: number }>(item: T): T => {
    const legacy = item as T & { stepIndex?: number };
    if (legacy.stepPosition !== undefined || legacy.stepIndex === undefined) return item;
    const { stepIndex, ...rest } = legacy;
    return { ...rest, stepPosition: stepIndex } as unknown as T;
  };
  return { ...plan, jobs: plan.jobs.map(positioned), renumber: plan.renumber.map(positioned) };
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoPipelineUploadRepository(db: Db): Promise<PipelineUploadRepository> {
  const uploads: Collection<UploadDoc> = db.collection("pipeline_uploads");
  await uploads.createIndex({ buildId: 1 }, { name: "build_uploads" });
  await uploads.createIndex({ state: 1, createdAt: 1 }, { name: "state_age" });
  const record = (doc: UploadDoc): UploadRecord => {
    const { _id, planJson, ...rest } = doc;
    return { ...rest, id: _id, plan: planJson ? parsePlan(planJson) : null };
  };
  return {
    async find(id) {
      const doc = await uploads.findOne({ _id: id });
      return doc ? record(doc) : null;
    },
    async markPlanned(planned) {
      const res = await uploads.updateOne(
        { _id: planned.id, state: "pending" },
        {
          $set: {
            state: "processing",
            planJson: planned.plan ? JSON.stringify(planned.plan) : null,
            stepIds: planned.stepIds,
            jobsAdded: planned.jobsAdded,
            ...(planned.notify ? { notify: planned.notify } : {}),
          },
          $unset: { request: "" },
        },
      );
      return res.modifiedCount === 1;
    },
    async markRejected(id, message) {
      const res = await uploads.updateOne(
        { _id: id, state: "pending" },
        { $set: { state: "rejected", message }, $unset: { request: "" } },
      );
      return res.modifiedCount === 1;
    },
    async unfinished(before, limit) {
      const docs = await uploads
        .find({ state: { $in: ["pending", "processing"] }, createdAt: { $lt: before } })
        .sort({ state: 1, createdAt: 1 })
        .limit(limit)
        .toArray();
      return docs.map(record).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    },
    async insert(record) {
      const { id, plan, ...rest } = record;
      try {
        await uploads.insertOne({ ...rest, _id: id, planJson: plan ? JSON.stringify(plan) : null });
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    },
    async markApplied(id) {
      await uploads.updateOne({ _id: id }, { $set: { state: "applied", planJson: null } });
    },
    async removeOfBuilds(buildIds) {
      if (buildIds.length > 0) await uploads.deleteMany({ buildId: { $in: [...buildIds] } });
    },
  };
}
