import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { AgentsService } from "@conveyor/proto/agents";
import { callErrorValue, invalidFields, isUuid, notFound, pageWindow, toTimestamp } from "@conveyor/runtime";
import { authenticate } from "../credentials/credentials.js";
import type { JobHandoff } from "../dispatch/job-handoff.js";
import type { AgentLifecycle } from "../lifecycle/agent-lifecycle.js";
import type { AgentPausing } from "../lifecycle/agent-pausing.js";
import type { createMetrics } from "../metrics/metrics.js";
import type { AgentRepository } from "../store/agent-repository.js";
import type { ClusterRepository } from "../store/cluster-repository.js";
import { agentMessage } from "./agent-message.js";

/** The most heartbeats one HeartbeatAgents call carries. */
const MAX_HEARTBEATS = 500;

type AgentRpcs = Omit<
  ServiceImpl<typeof AgentsService>,
  | "createCluster"
  | "getCluster"
  | "listClusters"
  | "updateCluster"
  | "createAgentToken"
  | "authenticateAgentToken"
  | "listAgentTokens"
  | "revokeAgentToken"
  | "deleteCluster"
  | "updateAgentToken"
  | "listClusterMaintainers"
  | "addClusterMaintainer"
  | "removeClusterMaintainer"
  | "createClusterQueue"
  | "getClusterQueue"
  | "listClusterQueues"
  | "updateClusterQueue"
  | "deleteClusterQueue"
  | "pauseClusterQueue"
  | "resumeClusterQueue"
>;

export interface AgentRpcsDeps {
  agents: AgentRepository;
  clusters: ClusterRepository;
  lifecycle: AgentLifecycle;
  pausing: AgentPausing;
  handoff: JobHandoff;
  metrics: ReturnType<typeof createMetrics>;
}

/** Longest filter text of the agents list. */
const MAX_FILTER = 255;

/** The RPCs agents call (through the gateway's /v3 routes) and the REST agent operations. */
export function createAgentRpcs(deps: AgentRpcsDeps): AgentRpcs {
  const { lifecycle, handoff } = deps;

  return {
    async authenticateAgentCredential(req) {
      return authenticate(req.secret, { clusters: deps.clusters, agents: deps.agents });
    },

    async registerAgent(req) {
      const { agent, accessToken } = await lifecycle.register(req);
      return { agent: agentMessage(agent), accessToken, ...lifecycle.intervals() };
    },

    async connectAgent(req) {
      return { agent: agentMessage(await lifecycle.connect(req.agentId, req)) };
    },

    async disconnectAgent(req) {
      return { agent: agentMessage(await lifecycle.disconnect(req.agentId)) };
    },

    async heartbeatAgent(req) {
      return { receivedAt: toTimestamp(await lifecycle.heartbeat(req.agentId)) };
    },

    async heartbeatAgents(req) {
      if (req.agentIds.length > MAX_HEARTBEATS)
        throw invalidFields([{ field: "agent_ids", code: `must name at most ${MAX_HEARTBEATS} agents` }]);
      const results = await Promise.all(
        req.agentIds.map(async (agentId) => {
          try {
            const receivedAt = toTimestamp(await lifecycle.heartbeat(agentId));
            return { result: { case: "heartbeat" as const, value: { receivedAt } } };
          } catch (err) {
            return { result: { case: "error" as const, value: callErrorValue(err) } };
          }
        }),
      );
      return { results };
    },

    async pingAgent(req) {
      return lifecycle.ping(req.agentId, { forStream: req.forStream });
    },

    async acceptJob(req) {
      const agent = await lifecycle.requireLive(req.agentId);
      if (req.jobId === "") throw notFound("job");
      return handoff.accept(agent, req.jobId);
    },

    async acquireJob(req) {
      const agent = await lifecycle.requireLive(req.agentId);
      if (req.jobId === "") throw notFound("job");
      const acquired = await handoff.acquire(agent, req.jobId);
      return "locked" in acquired ? { locked: true, env: {} } : acquired;
    },

    async finishJob(req) {
      const agent = await lifecycle.requireLive(req.agentId);
      const job = await handoff.finish(agent, {
        jobId: req.jobId,
        exitStatus: req.exitStatus,
        signal: req.signal,
        signalReason: req.signalReason,
        ...(req.finishedAt ? { finishedAt: timestampDate(req.finishedAt) } : {}),
      });
      return { job };
    },

    async getMetrics(req) {
      if (!isUuid(req.organizationId)) throw invalidFields([{ field: "organization_id", code: "must be a UUID" }]);
      if (req.clusterId !== "" && !isUuid(req.clusterId))
        throw invalidFields([{ field: "cluster_id", code: "must be a UUID" }]);
      return deps.metrics.get(req.organizationId, req.clusterId);
    },

    async listAgents(req) {
      if (!isUuid(req.organizationId)) throw invalidFields([{ field: "organization_id", code: "must be a UUID" }]);
      for (const [field, value] of Object.entries({ name: req.name, hostname: req.hostname, version: req.version })) {
        if (value.length > MAX_FILTER)
          throw invalidFields([{ field, code: `is too long (maximum is ${MAX_FILTER} characters)` }]);
      }
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await deps.agents.listAgents(
        req.organizationId,
        { name: req.name, hostname: req.hostname, version: req.version },
        skip,
        perPage + 1,
      );
      return { agents: page.slice(0, perPage).map(agentMessage), hasMore: page.length > perPage };
    },

    async getAgent(req) {
      const agent = isUuid(req.id) ? await deps.agents.findAgent(req.id) : null;
      if (!agent || agent.organizationId !== req.organizationId) throw notFound("agent");
      return { agent: agentMessage(agent) };
    },

    async stopAgent(req) {
      return { agent: agentMessage(await lifecycle.stop(req.organizationId, req.id, req.force)) };
    },

    async pauseAgent(req) {
      const by = req.pausedBy && req.pausedBy.id !== "" ? req.pausedBy : undefined;
      const agent = await deps.pausing.pause(req.organizationId, req.id, {
        note: req.note,
        timeoutInMinutes: req.timeoutInMinutes,
        pausedBy: by
          ? {
              id: by.id,
              name: by.name,
              email: by.email,
              avatarUrl: by.avatarUrl,
              createdAt: by.createdAt ? timestampDate(by.createdAt) : null,
            }
          : null,
      });
      return { agent: agentMessage(agent) };
    },

    async resumeAgent(req) {
      return { agent: agentMessage(await deps.pausing.resume(req.organizationId, req.id)) };
    },
  };
}
