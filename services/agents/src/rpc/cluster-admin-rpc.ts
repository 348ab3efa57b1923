import type { ServiceImpl } from "@connectrpc/connect";
import { type AgentsService, CredentialRevokedSchema } from "@conveyor/proto/agents";
import {
  alreadyExists,
  type EventPublisher,
  failedPrecondition,
  invalidFields,
  isUuid,
  newId,
  notFound,
  SUBJECTS,
  toTimestamp,
} from "@conveyor/runtime";
import { type ClusterPipelines, clusterPipelinesProblem, NAMED_PIPELINES } from "../domain/cluster-deletion.js";
import type { QueueDirectory } from "../queues/queue-directory.js";
import type { AgentRepository } from "../store/agent-repository.js";
import type { ClusterRepository } from "../store/cluster-repository.js";
import {
  DuplicateMaintainerError,
  MAX_MAINTAINERS_PER_CLUSTER,
  type MaintainerDoc,
  type MaintainerRepository,
} from "../store/maintainer-repository.js";
import type { QueueRepository } from "../store/queue-repository.js";
import { tokenMessage } from "./agent-message.js";

export interface ClusterAdminRpcsDeps {
  clusters: ClusterRepository;
  queues: QueueRepository;
  maintainers: MaintainerRepository;
  agents: Pick<AgentRepository, "countAgents">;
  directory: QueueDirectory;
  events: EventPublisher;
  now: () => Date;
  /**
   * A few of the pipelines of a cluster (up to `limit` slugs) and how many there are, asked of the pipelines service
   * (cluster-pipelines.ts); without it, a cluster is deleted whatever pipelines name it (tests).
   */
  pipelinesOf?: (organizationId: string, clusterId: string, limit: number) => Promise<ClusterPipelines>;
}

type ClusterAdminRpcs = Pick<
  ServiceImpl<typeof AgentsService>,
  "deleteCluster" | "updateAgentToken" | "listClusterMaintainers" | "addClusterMaintainer" | "removeClusterMaintainer"
>;

const MAX_DESCRIPTION = 1000;

const maintainerMessage = (m: MaintainerDoc) => ({
  id: m._id,
  clusterId: m.clusterId,
  userId: m.userId ?? "",
  teamId: m.teamId ?? "",
  createdAt: toTimestamp(m.createdAt),
});

/** Deleting clusters, describing their tokens, and their maintainers. */
export function createClusterAdminRpcs(deps: ClusterAdminRpcsDeps): ClusterAdminRpcs {
  const { clusters, queues, maintainers, events, now } = deps;

  const requireCluster = async (organizationId: string, id: string) => {
    const cluster = isUuid(organizationId) && isUuid(id) ? await clusters.findCluster(organizationId, id) : null;
    if (!cluster) throw notFound("cluster");
    return cluster;
  };

  return {
    async deleteCluster(req) {
      const cluster = await requireCluster(req.organizationId, req.id);
      const queueCount = (await queues.listQueues(cluster.organizationId, cluster._id)).length;
      if (queueCount > 0)
        throw failedPrecondition(
          `The cluster has ${queueCount} queue${queueCount === 1 ? "" : "s"}: delete them first`,
        );
      const live = (await deps.agents.countAgents(cluster.organizationId, cluster._id)).reduce(
        (n, c) => n + c.count,
        0,
      );
      if (live > 0) throw failedPrecondition(`The cluster has ${live} connected agent${live === 1 ? "" : "s"}`);
      // Asked last, of the pipelines service (a pipeline made meanwhile is not seen: docs/compatibility.md
      // #clusters-and-queues); if it cannot answer, the cluster is not deleted.
      if (deps.pipelinesOf) {
        const problem = clusterPipelinesProblem(
          await deps.pipelinesOf(cluster.organizationId, cluster._id, NAMED_PIPELINES),
        );
        if (problem) throw failedPrecondition(problem);
      }
      for (const token of await clusters.listAgentTokens(cluster.organizationId, cluster._id)) {
        if (token.revokedAt) continue;
        await clusters.revokeAgentToken(cluster.organizationId, token._id, now());
        await events.publish(SUBJECTS.agents.credentialRevoked, CredentialRevokedSchema, { tokenId: token._id });
      }
      await maintainers.deleteClusterMaintainers(cluster.organizationId, cluster._id);
      if (!(await clusters.deleteCluster(cluster.organizationId, cluster._id))) throw notFound("cluster");
      deps.directory.forget(cluster.organizationId, cluster._id);
      return {};
    },

    async updateAgentToken(req) {
      if (!isUuid(req.organizationId)) throw invalidFields([{ field: "organization_id", code: "must be a UUID" }]);
      const found = isUuid(req.id) ? await clusters.findAgentToken(req.id) : null;
      if (!found || found.organizationId !== req.organizationId || found.revokedAt) throw notFound("agent token");
      if (req.description === undefined) return { token: tokenMessage(found) };
      const description = req.description.trim();
      if (description === "") throw invalidFields([{ field: "description", code: "can't be blank" }]);
      if (description.length > MAX_DESCRIPTION)
        throw invalidFields([{ field: "description", code: `is too long (maximum is ${MAX_DESCRIPTION} characters)` }]);
      const updated = await clusters.updateAgentToken(req.organizationId, found._id, { description });
      if (!updated) throw notFound("agent token");
      return { token: tokenMessage(updated) };
    },

    async listClusterMaintainers(req) {
      const cluster = await requireCluster(req.organizationId, req.clusterId);
      return {
        maintainers: (await maintainers.listMaintainers(cluster.organizationId, cluster._id)).map(maintainerMessage),
      };
    },

    async addClusterMaintainer(req) {
      const cluster = await requireCluster(req.organizationId, req.clusterId);
      const user = req.userId !== "";
      const team = req.teamId !== "";
      if (user === team) throw invalidFields([{ field: "actor", code: "must name exactly one user or one team" }]);
      if (!isUuid(user ? req.userId : req.teamId))
        throw invalidFields([{ field: user ? "user_id" : "team_id", code: "must be a UUID" }]);
      const existing = await maintainers.listMaintainers(cluster.organizationId, cluster._id);
      if (existing.length >= MAX_MAINTAINERS_PER_CLUSTER)
        throw failedPrecondition(`A cluster has at most ${MAX_MAINTAINERS_PER_CLUSTER} maintainers`);
      const maintainer: MaintainerDoc = {
        _id: newId(),
        organizationId: cluster.organizationId,
        clusterId: cluster._id,
        userId: user ? req.userId : null,
        teamId: team ? req.teamId : null,
        createdAt: now(),
      };
      try {
        await maintainers.insertMaintainer(maintainer);
      } catch (err) {
        if (err instanceof DuplicateMaintainerError)
          throw alreadyExists(user ? "user_id" : "team_id", "already maintains this cluster", err);
        throw err;
      }
      return { maintainer: maintainerMessage(maintainer) };
    },

    async removeClusterMaintainer(req) {
      const cluster = await requireCluster(req.organizationId, req.clusterId);
      const removed =
        isUuid(req.id) && (await maintainers.deleteMaintainer(cluster.organizationId, cluster._id, req.id));
      if (!removed) throw notFound("maintainer");
      return {};
    },
  };
}
