import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AgentsService } from "@conveyor/proto/agents";
import {
  alreadyExists,
  hashSecret,
  invalidFields,
  isUuid,
  newId,
  newSecret,
  notFound,
  toTimestamp,
} from "@conveyor/runtime";
import {
  type AgentsRepository,
  type AgentTokenDoc,
  type ClusterDoc,
  DuplicateClusterError,
} from "./agents-repository.js";

/** Prefix of agent registration token secrets. */
export const AGENT_TOKEN_PREFIX = "bkat_";

export interface AgentsServiceDeps {
  repo: AgentsRepository;
  now?: () => Date;
}

const clusterMessage = (c: ClusterDoc) => ({
  id: c._id,
  organizationId: c.organizationId,
  name: c.name,
  description: c.description,
  createdAt: toTimestamp(c.createdAt),
});

const tokenMessage = (t: AgentTokenDoc) => ({
  id: t._id,
  organizationId: t.organizationId,
  clusterId: t.clusterId ?? "",
  description: t.description,
  createdAt: toTimestamp(t.createdAt),
  revokedAt: toTimestamp(t.revokedAt),
});

/** The agents service: clusters and agent registration tokens (agents and dispatch come later). */
export function createAgentsService(deps: AgentsServiceDeps): ServiceImpl<typeof AgentsService> {
  const { repo } = deps;
  const now = deps.now ?? (() => new Date());

  const requireOrgId = (organizationId: string) => {
    if (!isUuid(organizationId)) throw invalidFields([{ field: "organization_id", code: "must be a UUID" }]);
  };

  return {
    async createCluster(req) {
      requireOrgId(req.organizationId);
      const name = req.name.trim();
      if (name === "") throw invalidFields([{ field: "name", code: "can't be blank" }]);
      const cluster: ClusterDoc = {
        _id: newId(),
        organizationId: req.organizationId,
        name,
        description: req.description.trim(),
        createdAt: now(),
      };
      try {
        await repo.insertCluster(cluster);
      } catch (err) {
        if (err instanceof DuplicateClusterError) throw alreadyExists("name", "has already been taken", err);
        throw err;
      }
      return { cluster: clusterMessage(cluster) };
    },

    async getCluster(req) {
      const cluster = isUuid(req.id) ? await repo.findCluster(req.organizationId, req.id) : null;
      if (!cluster) throw notFound("cluster");
      return { cluster: clusterMessage(cluster) };
    },

    async createAgentToken(req) {
      requireOrgId(req.organizationId);
      let clusterId: string | null = null;
      if (req.clusterId !== "") {
        const cluster = isUuid(req.clusterId) ? await repo.findCluster(req.organizationId, req.clusterId) : null;
        if (!cluster) throw invalidFields([{ field: "cluster_id", code: "is not a cluster of this organization" }]);
        clusterId = cluster._id;
      }
      const secret = newSecret(AGENT_TOKEN_PREFIX);
      const token: AgentTokenDoc = {
        _id: newId(),
        hash: hashSecret(secret),
        organizationId: req.organizationId,
        clusterId,
        description: req.description.trim(),
        createdAt: now(),
        revokedAt: null,
      };
      await repo.insertAgentToken(token);
      return { token: tokenMessage(token), secret };
    },

    async authenticateAgentToken(req) {
      const token = req.secret === "" ? null : await repo.findAgentTokenByHash(hashSecret(req.secret));
      if (!token || token.revokedAt) throw new ConnectError("invalid or revoked agent token", Code.Unauthenticated);
      return { token: tokenMessage(token) };
    },
  };
}
