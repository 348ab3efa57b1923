import { isDuplicateKeyError, type SealedEnvelope } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";

/** Who created or changed a secret. */
export interface ActorDoc {
  id: string;
  name: string;
  email: string;
}

/** A cluster secret as stored: its value only sealed (`packages/runtime/src/crypto/envelope.ts`). */
export interface SecretDoc {
  _id: string;
  organizationId: string;
  clusterId: string;
  key: string;
  /** The key in lower case: unique in the cluster, and what reads look up. */
  keyLower: string;
  description: string;
  /** The policy's text as given; empty for none. */
  policy: string;
  /** The value, sealed for this secret (binding: organization, cluster and id). Never answered, never logged. */
  value: SealedEnvelope;
  createdAt: Date;
  createdBy: ActorDoc | null;
  updatedAt: Date;
  updatedBy: ActorDoc | null;
  lastReadAt: Date | null;
}

/** One read of a secret by a job, allowed or refused. */
export interface SecretReadDoc {
  _id: string;
  organizationId: string;
  clusterId: string;
  /** The secret read; empty when the job's cluster has no secret of that key. */
  secretId: string;
  key: string;
  jobId: string;
  buildId: string;
  agentId: string;
  pipelineSlug: string;
  branch: string;
  allowed: boolean;
  reason: string;
  readAt: Date;
}

/** Raised when a key is already taken in its cluster. */
export class DuplicateSecretError extends Error {
  override name = "DuplicateSecretError";
}

/** The change an update makes. */
export type SecretChange = Partial<Pick<SecretDoc, "description" | "policy" | "value">> & {
  updatedAt: Date;
  updatedBy: ActorDoc | null;
};

/** Persistence of cluster secrets and their reads. */
export interface SecretRepository {
  insert(secret: SecretDoc): Promise<void>;
  find(organizationId: string, clusterId: string, id: string): Promise<SecretDoc | null>;
  findByKey(organizationId: string, clusterId: string, keyLower: string): Promise<SecretDoc | null>;
  /** A cluster's secrets by key, at most `limit`. */
  list(organizationId: string, clusterId: string, limit: number): Promise<SecretDoc[]>;
  count(organizationId: string, clusterId: string): Promise<number>;
  update(organizationId: string, clusterId: string, id: string, change: SecretChange): Promise<SecretDoc | null>;
  /** Replaces a value only while it is still sealed under `keyId` (the rewrap's compare-and-set). */
  replaceValue(id: string, keyId: string, value: SealedEnvelope): Promise<boolean>;
  /** Every secret, a page at a time from after `afterId` (the rewrap's walk). */
  page(afterId: string, limit: number): Promise<SecretDoc[]>;
  remove(organizationId: string, clusterId: string, id: string): Promise<boolean>;
  markRead(id: string, at: Date): Promise<void>;
  insertRead(read: SecretReadDoc): Promise<void>;
  /** A secret's latest reads, newest first. */
  listReads(organizationId: string, secretId: string, limit: number): Promise<SecretReadDoc[]>;
  /** Removes the reads made before `before`; how many. */
  pruneReads(before: Date): Promise<number>;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoSecretRepository(db: Db): Promise<SecretRepository> {
  const secrets: Collection<SecretDoc> = db.collection("cluster_secrets");
  const reads: Collection<SecretReadDoc> = db.collection("cluster_secret_reads");
  await Promise.all([
    secrets.createIndex({ clusterId: 1, keyLower: 1 }, { unique: true, name: "cluster_key_unique" }),
    reads.createIndex({ secretId: 1, readAt: -1 }, { name: "secret_newest_first" }),
    reads.createIndex({ readAt: 1 }, { name: "read_at" }),
  ]);
  return {
    async insert(secret) {
      try {
        await secrets.insertOne(secret);
      } catch (err) {
        if (isDuplicateKeyError(err)) throw new DuplicateSecretError(secret.key, { cause: err });
        throw err;
      }
    },
    find: (organizationId, clusterId, id) => secrets.findOne({ _id: id, organizationId, clusterId }),
    findByKey: (organizationId, clusterId, keyLower) => secrets.findOne({ clusterId, keyLower, organizationId }),
    list: (organizationId, clusterId, limit) =>
      secrets.find({ clusterId, organizationId }).sort({ clusterId: 1, keyLower: 1 }).limit(limit).toArray(),
    count: (organizationId, clusterId) => secrets.countDocuments({ clusterId, organizationId }),
    update: (organizationId, clusterId, id, change) =>
      secrets.findOneAndUpdate({ _id: id, organizationId, clusterId }, { $set: change }, { returnDocument: "after" }),
    async replaceValue(id, keyId, value) {
      return (await secrets.updateOne({ _id: id, "value.keyId": keyId }, { $set: { value } })).modifiedCount === 1;
    },
    page: (afterId, limit) =>
      secrets
        .find(afterId ? { _id: { $gt: afterId } } : {})
        .sort({ _id: 1 })
        .limit(limit)
        .toArray(),
    async remove(organizationId, clusterId, id) {
      const gone = (await secrets.deleteOne({ _id: id, organizationId, clusterId })).deletedCount === 1;
      if (gone) await reads.deleteMany({ secretId: id });
      return gone;
    },
    async markRead(id, at) {
      await secrets.updateOne({ _id: id }, { $set: { lastReadAt: at } });
    },
    async insertRead(read) {
      await reads.insertOne(read);
    },
    listReads: (organizationId, secretId, limit) =>
      reads.find({ secretId, organizationId }).sort({ secretId: 1, readAt: -1 }).limit(limit).toArray(),
    async pruneReads(before) {
      return (await reads.deleteMany({ readAt: { $lt: before } })).deletedCount;
    },
  };
}
