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
export interface AgentsRepository {
  insertCluster(cluster: ClusterDoc): Promise<void>;
  findCluster(organizationId: string, id: string): Promise<ClusterDoc | null>;
  insertAgentToken(token: AgentTokenDoc): Promise<void>;
  findAgentTokenByHash(hash: string): Promise<AgentTokenDoc | null>;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoAgentsRepository(db: Db): Promise<AgentsRepository> {
  const clusters: Collection<ClusterDoc> = db.collection("clusters");
  const tokens: Collection<AgentTokenDoc> = db.collection("agent_tokens");
  await Promise.all([
    clusters.createIndex({ organizationId: 1, name: 1 }, { unique: true, name: "org_name_unique" }),
    tokens.createIndex({ hash: 1 }, { unique: true, name: "hash_unique" }),
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
    insertAgentToken: async (token) => {
      await tokens.insertOne(token);
    },
    findAgentTokenByHash: (hash) => tokens.findOne({ hash }),
  };
}
