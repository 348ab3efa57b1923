import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";

/** A user or a team that may manage a cluster besides the organization's administrators. */
export interface MaintainerDoc {
  _id: string;
  organizationId: string;
  clusterId: string;
  /** Exactly one of userId and teamId is set. */
  userId: string | null;
  teamId: string | null;
  createdAt: Date;
}

/** Raised when the user or team already maintains the cluster. */
export class DuplicateMaintainerError extends Error {
  override name = "DuplicateMaintainerError";
}

/** Persistence of clusters' maintainers. */
export interface MaintainerRepository {
  insertMaintainer(m: MaintainerDoc): Promise<void>;
  listMaintainers(organizationId: string, clusterId: string): Promise<MaintainerDoc[]>;
  /** True when it was there. */
  deleteMaintainer(organizationId: string, clusterId: string, id: string): Promise<boolean>;
  /** Removes every maintainer of a cluster (it is deleted). */
  deleteClusterMaintainers(organizationId: string, clusterId: string): Promise<void>;
}

/** The most maintainers a cluster has. */
export const MAX_MAINTAINERS_PER_CLUSTER = 100;

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoMaintainerRepository(db: Db): Promise<MaintainerRepository> {
  const maintainers: Collection<MaintainerDoc> = db.collection("cluster_maintainers");
  await maintainers.createIndex(
    { organizationId: 1, clusterId: 1, userId: 1, teamId: 1 },
    { unique: true, name: "cluster_actor_unique" },
  );
  return {
    async insertMaintainer(m) {
      try {
        await maintainers.insertOne(m);
      } catch (err) {
        if (isDuplicateKeyError(err)) throw new DuplicateMaintainerError(m._id, { cause: err });
        throw err;
      }
    },
    listMaintainers: (organizationId, clusterId) =>
      maintainers
        .find({ organizationId, clusterId })
        .sort({ organizationId: 1, clusterId: 1, userId: 1, teamId: 1 })
        .limit(MAX_MAINTAINERS_PER_CLUSTER)
        .toArray(),
    async deleteMaintainer(organizationId, clusterId, id) {
      return (await maintainers.deleteOne({ _id: id, organizationId, clusterId })).deletedCount === 1;
    },
    async deleteClusterMaintainers(organizationId, clusterId) {
      await maintainers.deleteMany({ organizationId, clusterId });
    },
  };
}

/** An in-memory MaintainerRepository with the MongoDB one's semantics, for unit tests. */
export function createMemoryMaintainerRepository(): MaintainerRepository {
  const all = new Map<string, MaintainerDoc>();
  const of = (organizationId: string, clusterId: string) =>
    [...all.values()].filter((m) => m.organizationId === organizationId && m.clusterId === clusterId);
  return {
    async insertMaintainer(m) {
      if (of(m.organizationId, m.clusterId).some((o) => o.userId === m.userId && o.teamId === m.teamId))
        throw new DuplicateMaintainerError(m._id);
      all.set(m._id, structuredClone(m));
    },
    listMaintainers: async (organizationId, clusterId) =>
      of(organizationId, clusterId)
        .slice(0, MAX_MAINTAINERS_PER_CLUSTER)
        .map((m) => structuredClone(m)),
    deleteMaintainer: async (organizationId, clusterId, id) =>
      of(organizationId, clusterId).some((m) => m._id === id) ? all.delete(id) : false,
    async deleteClusterMaintainers(organizationId, clusterId) {
      for (const m of of(organizationId, clusterId)) all.delete(m._id);
    },
  };
}
