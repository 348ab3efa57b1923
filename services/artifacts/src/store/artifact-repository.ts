import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db, Filter } from "mongodb";
import { type ArtifactState, transition } from "../domain/artifact-state.js";

/** An artifact record. */
export interface ArtifactDoc {
  _id: string;
  organizationId: string;
  pipelineId: string;
  buildId: string;
  buildNumber: number;
  jobId: string;
  batchId: string;
  /** Its position in its batch: records created together are listed in the order the agent announced them. */
  position: number;
  state: ArtifactState;
  path: string;
  globPath: string;
  mimeType: string;
  fileSize: number;
  sha1sum: string;
  sha256sum: string;
  /** Where its contents are in the bucket (a key no other record ever names: `objectKeyOf`). */
  objectKey: string;
  /**
   * The store's checksum (ETag) of the object when the upload finished; a download refuses an object that no longer
   * has it. Absent on records finished before it was kept (their size is still checked).
   */
  etag?: string;
  createdAt: Date;
  /** When the agent reported it finished. */
  uploadedAt: Date | null;
  /** When it became error, deleted or expired. */
  endedAt: Date | null;
  /**
   * False while an error, deleted or expired artifact may still have an object in the store: the sweep removes it
   * and sets this, so a removal that failed (or a crash before it) is retried.
   */
  objectRemoved: boolean;
}

/** Which artifacts of a build a list or search covers. */
export interface ArtifactFilter {
  buildId: string;
  jobId?: string;
  jobIds?: readonly string[];
  excludeJobIds?: readonly string[];
  state?: ArtifactState;
}

/** Persistence of artifact records, per-job quotas and organization retention. */
export interface ArtifactRepository {
  /** Inserts records durably (journaled); records whose id exists already are left as they are. */
  insertMany(docs: readonly ArtifactDoc[]): Promise<void>;
  findByIds(ids: readonly string[]): Promise<ArtifactDoc[]>;
  /**
   * Counts `n` more artifacts against a quota (a job's id, or `build:<id>` for a build's), unless that would exceed
   * `limit`; false when refused.
   */
  reserveQuota(key: string, n: number, limit: number): Promise<boolean>;
  /** Gives back `n` a reservation took (when another quota refused the same batch). */
  releaseQuota(key: string, n: number): Promise<void>;
  /**
   * Moves the records named (of one job, when given) from one of `from` to `to`, setting `set` too; returns how many
   * moved. Every move is conditioned on the current state, so concurrent moves never both win.
   */
  transition(
    ids: readonly string[],
    from: readonly ArtifactState[],
    to: ArtifactState,
    set: Partial<Pick<ArtifactDoc, "uploadedAt" | "endedAt" | "objectRemoved">>,
    jobId?: string,
  ): Promise<number>;
  /**
   * Finishes uploads: each record named (of the job) that is still `new` becomes `finished`, with its object's
   * checksum, in one round trip; returns how many moved.
   */
  finishUploads(uploads: ReadonlyArray<{ id: string; etag: string }>, at: Date, jobId: string): Promise<number>;
  /** Flags records whose object must be removed (again). */
  requireRemoval(ids: readonly string[]): Promise<void>;
  /** One page of a build's (or job's) visible artifacts, oldest first, and how many there are. */
  list(filter: ArtifactFilter, skip: number, limit: number): Promise<{ items: ArtifactDoc[]; total: number }>;
  /** The visible artifacts of a filter, oldest first, as a stream (search reads them without holding them all). */
  scan(filter: ArtifactFilter): AsyncIterable<ArtifactDoc>;
  /** One visible artifact of a build's job. */
  find(buildId: string, jobId: string, id: string): Promise<ArtifactDoc | null>;
  /** Any record of a build (to learn its organization, pipeline and number). */
  anyOfBuild(buildId: string): Promise<ArtifactDoc | null>;
  /** Up to `limit` records in one of `states` created before `before`, of these organizations or of all others. */
  findOld(
    states: readonly ArtifactState[],
    before: Date,
    orgs: { in: readonly string[] } | { notIn: readonly string[] },
    limit: number,
  ): Promise<ArtifactDoc[]>;
  /** Up to `limit` error, deleted or expired records whose object may still be in the store. */
  findUnremoved(limit: number): Promise<ArtifactDoc[]>;
  markRemoved(ids: readonly string[]): Promise<void>;
  /** An organization's retention in days, or null for the default. */
  getRetention(organizationId: string): Promise<number | null>;
  setRetention(organizationId: string, days: number | null): Promise<void>;
  /** Every organization with its own retention. */
  listRetentions(): Promise<Array<{ organizationId: string; days: number }>>;
}

interface QuotaDoc {
  _id: string;
  count: number;
}

interface RetentionDoc {
  _id: string;
  days: number;
}

const VISIBLE = { $ne: "deleted" as const };

/** The query of a filter; deleted records are never part of it. */
export function filterQuery(filter: ArtifactFilter): Filter<ArtifactDoc> {
  const jobIn = filter.jobIds && filter.jobIds.length > 0 ? [...filter.jobIds] : undefined;
  const jobOut = filter.excludeJobIds && filter.excludeJobIds.length > 0 ? [...filter.excludeJobIds] : undefined;
  const job = filter.jobId
    ? { jobId: filter.jobId }
    : jobIn || jobOut
      ? { jobId: { ...(jobIn ? { $in: jobIn } : {}), ...(jobOut ? { $nin: jobOut } : {}) } }
      : {};
  return {
    buildId: filter.buildId,
    ...job,
    state: filter.state && filter.state !== "deleted" ? filter.state : VISIBLE,
  };
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoArtifactRepository(db: Db): Promise<ArtifactRepository> {
  const artifacts: Collection<ArtifactDoc> = db.collection("artifacts");
  const quotas: Collection<QuotaDoc> = db.collection("job_quotas");
  const retention: Collection<RetentionDoc> = db.collection("retention");
  await Promise.all([
    artifacts.createIndex({ buildId: 1, jobId: 1, createdAt: 1, position: 1, _id: 1 }, { name: "build_job_order" }),
    artifacts.createIndex({ buildId: 1, createdAt: 1, position: 1, _id: 1 }, { name: "build_order" }),
    // A search for one state (the agent's `artifact search` asks for finished ones) reads only the records in that
    // state, in order: records a job created and never uploaded do not slow it (docs/limits.md#per-build).
    artifacts.createIndex({ buildId: 1, state: 1, createdAt: 1, position: 1, _id: 1 }, { name: "build_state_order" }),
    artifacts.createIndex({ state: 1, createdAt: 1 }, { name: "state_age" }),
    artifacts.createIndex({ organizationId: 1, state: 1, createdAt: 1 }, { name: "org_state_age" }),
    artifacts.createIndex({ objectRemoved: 1, state: 1 }, { name: "removal" }),
  ]);
  return {
    async insertMany(docs) {
      if (docs.length === 0) return;
      try {
        // Journaled, so that a batch answered 201 survives a crash of the database server too.
        await artifacts.insertMany([...docs], { ordered: false, writeConcern: { w: "majority", journal: true } });
      } catch (err) {
        // Records of an earlier attempt of the same batch are already there: that is the point of their ids.
        const writeErrors = (err as { writeErrors?: unknown }).writeErrors;
        const list = Array.isArray(writeErrors) ? writeErrors : [writeErrors ?? err];
        if (!list.every((e) => isDuplicateKeyError(e))) throw err;
      }
    },
    findByIds: (ids) => artifacts.find({ _id: { $in: [...ids] } }).toArray(),
    async reserveQuota(key, n, limit) {
      if (n <= 0) return true;
      if (n > limit) return false;
      try {
        // One conditional increment: the upsert inserts a first count, and a count that would pass the limit
        // matches nothing, so the upsert tries a second document with the same _id and fails as a duplicate.
        await quotas.updateOne({ _id: key, count: { $lte: limit - n } }, { $inc: { count: n } }, { upsert: true });
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    },
    async releaseQuota(key, n) {
      if (n > 0) await quotas.updateOne({ _id: key, count: { $gte: n } }, { $inc: { count: -n } });
    },
    async transition(ids, from, to, set, jobId) {
      if (ids.length === 0) return 0;
      const res = await artifacts.updateMany(
        { _id: { $in: [...ids] }, state: { $in: [...from] }, ...(jobId ? { jobId } : {}) },
        { $set: { state: to, ...set } },
      );
      return res.modifiedCount;
    },
    async finishUploads(uploads, at, jobId) {
      if (uploads.length === 0) return 0;
      const { from, to } = transition("upload_finished");
      const res = await artifacts.bulkWrite(
        uploads.map((u) => ({
          updateOne: {
            filter: { _id: u.id, state: { $in: [...from] }, jobId },
            update: { $set: { state: to, uploadedAt: at, etag: u.etag } },
          },
        })),
        { ordered: false },
      );
      return res.modifiedCount;
    },
    async requireRemoval(ids) {
      if (ids.length > 0) await artifacts.updateMany({ _id: { $in: [...ids] } }, { $set: { objectRemoved: false } });
    },
    async list(filter, skip, limit) {
      const query = filterQuery(filter);
      const [items, total] = await Promise.all([
        artifacts.find(query).sort({ createdAt: 1, position: 1, _id: 1 }).skip(skip).limit(limit).toArray(),
        artifacts.countDocuments(query),
      ]);
      return { items, total };
    },
    scan: (filter) => artifacts.find(filterQuery(filter)).sort({ createdAt: 1, position: 1, _id: 1 }).batchSize(1000),
    find: (buildId, jobId, id) => artifacts.findOne({ _id: id, buildId, jobId, state: VISIBLE }),
    anyOfBuild: (buildId) => artifacts.findOne({ buildId }),
    findOld(states, before, orgs, limit) {
      const organizationId = "in" in orgs ? { $in: [...orgs.in] } : { $nin: [...orgs.notIn] };
      return artifacts
        .find({ organizationId, state: { $in: [...states] }, createdAt: { $lt: before } })
        .limit(limit)
        .toArray();
    },
    findUnremoved: (limit) =>
      artifacts
        .find({ objectRemoved: false, state: { $in: ["error", "deleted", "expired"] } })
        .limit(limit)
        .toArray(),
    async markRemoved(ids) {
      if (ids.length > 0) await artifacts.updateMany({ _id: { $in: [...ids] } }, { $set: { objectRemoved: true } });
    },
    async getRetention(organizationId) {
      return (await retention.findOne({ _id: organizationId }))?.days ?? null;
    },
    async setRetention(organizationId, days) {
      if (days === null) await retention.deleteOne({ _id: organizationId });
      else await retention.updateOne({ _id: organizationId }, { $set: { days } }, { upsert: true });
    },
    async listRetentions() {
      return (await retention.find({}).toArray()).map((r) => ({ organizationId: r._id, days: r.days }));
    },
  };
}
