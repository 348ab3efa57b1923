import type { ServiceImpl } from "@connectrpc/connect";
import { type AgentsService, CredentialRevokedSchema } from "@conveyor/proto/agents";
import {
  alreadyExists,
  type EventPublisher,
  hashSecret,
  invalidFields,
  isUuid,
  newId,
  newSecret,
  notFound,
  SUBJECTS,
} from "@conveyor/runtime";
import { REGISTRATION_TOKEN_PREFIX, unauthenticated } from "../credentials/credentials.js";
import {
  type AgentTokenDoc,
  type ClusterDoc,
  type ClusterRepository,
  DuplicateClusterError,
} from "../store/cluster-repository.js";
import { clusterMessage, tokenMessage } from "./agent-message.js";

export interface ClustersRpcDeps {
  clusters: ClusterRepository;
  events: EventPublisher;
  now: () => Date;
}

type ClusterRpcs = Pick<
  ServiceImpl<typeof AgentsService>,
  | "createCluster"
  | "getCluster"
  | "listClusters"
  | "updateCluster"
  | "createAgentToken"
  | "authenticateAgentToken"
  | "listAgentTokens"
  | "revokeAgentToken"
>;

const MAX_DESCRIPTION = 1000;

/** Clusters and agent registration tokens. */
export function createClusterRpcs(deps: ClustersRpcDeps): ClusterRpcs {
  const { clusters, now } = deps;

  const requireOrgId = (organizationId: string) => {
    if (!isUuid(organizationId)) throw invalidFields([{ field: "organization_id", code: "must be a UUID" }]);
  };
  const checkDescription = (description: string) => {
    if (description.length > MAX_DESCRIPTION)
      throw invalidFields([{ field: "description", code: `is too long (maximum is ${MAX_DESCRIPTION} characters)` }]);
  };

  const checkName = (raw: string) => {
    const name = raw.trim();
    if (name === "") throw invalidFields([{ field: "name", code: "can't be blank" }]);
    if (name.length > 255) throw invalidFields([{ field: "name", code: "is too long (maximum is 255 characters)" }]);
    return name;
  };

  return {
    async createCluster(req) {
      requireOrgId(req.organizationId);
      const name = checkName(req.name);
      checkDescription(req.description);
      const cluster: ClusterDoc = {
        _id: newId(),
        organizationId: req.organizationId,
        name,
        description: req.description.trim(),
        createdAt: now(),
      };
      try {
        await clusters.insertCluster(cluster);
      } catch (err) {
        if (err instanceof DuplicateClusterError) throw alreadyExists("name", "has already been taken", err);
        throw err;
      }
      return { cluster: clusterMessage(cluster) };
    },

    async getCluster(req) {
      const cluster = isUuid(req.id) ? await clusters.findCluster(req.organizationId, req.id) : null;
      if (!cluster) throw notFound("cluster");
      return { cluster: clusterMessage(cluster) };
    },

    async updateCluster(req) {
      const change: { name?: string; description?: string } = {};
      if (req.name !== undefined) change.name = checkName(req.name);
      if (req.description !== undefined) {
        checkDescription(req.description);
        change.description = req.description.trim();
      }
      const found = isUuid(req.id) ? await clusters.findCluster(req.organizationId, req.id) : null;
      if (!found) throw notFound("cluster");
      try {
        const updated = await clusters.updateCluster(req.organizationId, found._id, change);
        if (!updated) throw notFound("cluster");
        return { cluster: clusterMessage(updated) };
      } catch (err) {
        if (err instanceof DuplicateClusterError) throw alreadyExists("name", "has already been taken", err);
        throw err;
      }
    },

    async listClusters(req) {
      requireOrgId(req.organizationId);
      return { clusters: (await clusters.listClusters(req.organizationId)).map(clusterMessage) };
    },

    async createAgentToken(req) {
      requireOrgId(req.organizationId);
      checkDescription(req.description);
      let clusterId: string | null = null;
      if (req.clusterId !== "") {
        const cluster = isUuid(req.clusterId) ? await clusters.findCluster(req.organizationId, req.clusterId) : null;
        if (!cluster) throw invalidFields([{ field: "cluster_id", code: "is not a cluster of this organization" }]);
        clusterId = cluster._id;
      }
      const secret = newSecret(REGISTRATION_TOKEN_PREFIX);
      const token: AgentTokenDoc = {
        _id: newId(),
        hash: hashSecret(secret),
        organizationId: req.organizationId,
        clusterId,
        description: req.description.trim(),
        createdAt: now(),
        revokedAt: null,
      };
      await clusters.insertAgentToken(token);
      return { token: tokenMessage(token), secret };
    },

    async authenticateAgentToken(req) {
      const token = req.secret.startsWith(REGISTRATION_TOKEN_PREFIX)
        ? await clusters.findAgentTokenByHash(hashSecret(req.secret))
        : null;
      if (!token || token.revokedAt) throw unauthenticated();
      return { token: tokenMessage(token) };
    },

    async listAgentTokens(req) {
      requireOrgId(req.organizationId);
      const tokens = await clusters.listAgentTokens(req.organizationId, req.clusterId || undefined);
      return { tokens: tokens.map(tokenMessage) };
    },

    async revokeAgentToken(req) {
      requireOrgId(req.organizationId);
      const token = isUuid(req.id) ? await clusters.revokeAgentToken(req.organizationId, req.id, now()) : null;
      if (!token) throw notFound("agent token");
      await deps.events.publish(SUBJECTS.agents.credentialRevoked, CredentialRevokedSchema, { tokenId: token._id });
      return { token: tokenMessage(token) };
    },
  };
}
