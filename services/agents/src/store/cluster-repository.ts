import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";

export interface ClusterDoc {
  _id: string;
  organizationId: string;
  name: string;
  description: string;
  createdAt: Date;
}

export interface AgentTokenDoc {
  _id: string;
  /** SHA-256 of the secret. */
  hash: string;
  organizationId: string;
  clusterId: string | null;
  description: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/** Raised when a cluster name is already taken in its organization. */
export class DuplicateClusterError extends Error {
  override name = "DuplicateClusterError";
}

/** Persistence of clusters and agent registration tokens. */
export interface ClusterRepository {
  insertCluster(cluster: ClusterDoc): Promise<void>;
  findCluster(organizationId: string, id: string): Promise<ClusterDoc | null>;
  listClusters(organizationId: string): Promise<ClusterDoc[]>;
  /** Changes a cluster's name or description; null when there is none. A taken name is a DuplicateClusterError. */
  updateCluster(
    organizationId: string,
    id: string,
    change: Partial<Pick<ClusterDoc, "name" | "description">>,
  ): Promise<ClusterDoc | null>;
  /** Removes a cluster; true when it was there. */
  deleteCluster(organizationId: string, id: string): Promise<boolean>;
  insertAgentToken(token: AgentTokenDoc): Promise<void>;
  /** Changes an active token's description; null when the organization has no such active token. */
  updateAgentToken(organizationId: string, id: string, change: { description: string }): Promise<AgentTokenDoc | null>;
  findAgentToken(id: string): Promise<AgentTokenDoc | null>;
  findAgentTokenByHash(hash: string): Promise<AgentTokenDoc | null>;
  listAgentTokens(organizationId: string, clusterId?: string): Promise<AgentTokenDoc[]>;
  /** Marks a token revoked (once); returns it as it is now, or null when the organization has no such token. */
  revokeAgentToken(organizationId: string, id: string, at: Date): Promise<AgentTokenDoc | null>;
}

/** The most clusters or tokens one list returns (an organization has a handful). */
const LIST_LIMIT = 500;

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoClusterRepository(db: Db): Promise<ClusterRepository> {
  const clusters: Collection<ClusterDoc> = db.collection("clusters");
  const tokens: Collection<AgentTokenDoc> = db.collection("agent_tokens");
  await Promise.all([
    clusters.createIndex({ organizationId: 1, name: 1 }, { unique: true, name: "org_name_unique" }),
    tokens.createIndex({ hash: 1 }, { unique: true, name: "hash_unique" }),
    tokens.createIndex({ organizationId: 1, createdAt: -1 }, { name: "org_newest_first" }),
  ]);
  return {
    async insertCluster(cluster) {
      try {
        await clusters.insertOne(cluster);
      } catch (err) {
        if (isDuplicateKeyError(err)) throw new DuplicateClusterError(cluster.name, { cause: err });
        throw err;
      }
    },
    findCluster: (organizationId, id) => clusters.findOne({ _id: id, organizationId }),
    async updateCluster(organizationId, id, change) {
      try {
        return await clusters.findOneAndUpdate(
          { _id: id, organizationId },
          { $set: change },
          { returnDocument: "after" },
        );
      } catch (err) {
        if (isDuplicateKeyError(err)) throw new DuplicateClusterError(change.name ?? "", { cause: err });
        throw err;
      }
    },
    listClusters: (organizationId) =>
      clusters.find({ organizationId }).sort({ organizationId: 1, name: 1 }).limit(LIST_LIMIT).toArray(),
    async deleteCluster(organizationId, id) {
      return (await clusters.deleteOne({ _id: id, organizationId })).deletedCount === 1;
    },
    updateAgentToken: (organizationId, id, change) =>
      tokens.findOneAndUpdate(
        { _id: id, organizationId, revokedAt: null },
        { $set: change },
        { returnDocument: "after" },
      ),
    insertAgentToken: async (token) => {
      await tokens.insertOne(token);
    },
    findAgentToken: (id) => tokens.findOne({ _id: id }),
    findAgentTokenByHash: (hash) => tokens.findOne({ hash }),
    listAgentTokens: (organizationId, clusterId) =>
      tokens
        .find({ organizationId, ...(clusterId ? { clusterId } : {}) })
        .sort({ organizationId: 1, createdAt: -1 })
        .limit(LIST_LIMIT)
        .toArray(),
    async revokeAgentToken(organizationId, id, at) {
      await tokens.updateOne({ _id: id, organizationId, revokedAt: null }, { $set: { revokedAt: at } });
      return tokens.findOne({ _id: id, organizationId });
    },
  };
}
