import {
  type AgentTokenDoc,
  type ClusterDoc,
  type ClusterRepository,
  DuplicateClusterError,
} from "./cluster-repository.js";

/** Binary string order, as MongoDB sorts without a collation. */
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The most clusters or tokens one list returns, as in the MongoDB repository. */
const LIST_LIMIT = 500;

/**
 * An in-memory ClusterRepository with the semantics of the MongoDB one (a cluster name unique in its organization,
 * unique token hashes, a revocation stamped once), for unit tests.
 */
export function createMemoryClusterRepository(): ClusterRepository {
  const clusters = new Map<string, ClusterDoc>();
  const tokens = new Map<string, AgentTokenDoc>();
  const copy = <T>(v: T): T => structuredClone(v);

  return {
    async insertCluster(cluster) {
      if ([...clusters.values()].some((c) => c.organizationId === cluster.organizationId && c.name === cluster.name)) {
        throw new DuplicateClusterError(cluster.name);
      }
      clusters.set(cluster._id, copy(cluster));
    },
    async findCluster(organizationId, id) {
      const cluster = clusters.get(id);
      return cluster && cluster.organizationId === organizationId ? copy(cluster) : null;
    },
    async updateCluster(organizationId, id, change) {
      const cluster = clusters.get(id);
      if (!cluster || cluster.organizationId !== organizationId) return null;
      const { name } = change;
      const others = [...clusters.values()].filter((c) => c._id !== id && c.organizationId === organizationId);
      if (name !== undefined && others.some((c) => c.name === name)) throw new DuplicateClusterError(name);
      Object.assign(cluster, copy(change));
      return copy(cluster);
    },
    async listClusters(organizationId) {
      return [...clusters.values()]
        .filter((c) => c.organizationId === organizationId)
        .sort((a, b) => cmp(a.name, b.name))
        .slice(0, LIST_LIMIT)
        .map(copy);
    },
    async deleteCluster(organizationId, id) {
      return clusters.get(id)?.organizationId === organizationId ? clusters.delete(id) : false;
    },
    async updateAgentToken(organizationId, id, change) {
      const token = tokens.get(id);
      if (!token || token.organizationId !== organizationId || token.revokedAt) return null;
      Object.assign(token, copy(change));
      return copy(token);
    },
    async insertAgentToken(token) {
      if (tokens.has(token._id) || [...tokens.values()].some((t) => t.hash === token.hash)) {
        throw Object.assign(new Error("E11000 duplicate key error"), { code: 11000 });
      }
      tokens.set(token._id, copy(token));
    },
    findAgentToken: async (id) => copy(tokens.get(id) ?? null),
    findAgentTokenByHash: async (hash) => copy([...tokens.values()].find((t) => t.hash === hash) ?? null),
    async listAgentTokens(organizationId, clusterId) {
      return [...tokens.values()]
        .filter((t) => t.organizationId === organizationId && (!clusterId || t.clusterId === clusterId))
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
        .slice(0, LIST_LIMIT)
        .map(copy);
    },
    async revokeAgentToken(organizationId, id, at) {
      const token = tokens.get(id);
      if (!token || token.organizationId !== organizationId) return null;
      if (token.revokedAt === null) tokens.set(id, { ...token, revokedAt: new Date(at) });
      return copy(tokens.get(id) ?? null);
    },
  };
}
