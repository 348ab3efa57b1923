import type { ServiceImpl } from "@connectrpc/connect";
import { AgentChangedSchema, type AgentsService } from "@conveyor/proto/agents";
import type { Job } from "@conveyor/proto/builds";
import {
  createMemoryOutboxStore,
  createOutbox,
  type EventPublisher,
  type Logger,
  type OutboxStore,
  type RawPublish,
  SUBJECTS,
} from "@conveyor/runtime";
import type { AgentsConfig } from "./config.js";
import { createDispatchHints } from "./dispatch/dispatch-hints.js";
import { createHintsRefresh } from "./dispatch/hints-refresh.js";
import { type BuildsClient, createJobHandoff } from "./dispatch/job-handoff.js";
import { dispatchPausedFor } from "./domain/cluster-queues.js";
import { agentEventResolvers, publishAgentEvents } from "./events/agent-events.js";
import { createAgentDirectory } from "./lifecycle/agent-directory.js";
import { createAgentLifecycle } from "./lifecycle/agent-lifecycle.js";
import { createAgentPausing } from "./lifecycle/agent-pausing.js";
import { createLiveness } from "./lifecycle/liveness.js";
import { createMetrics } from "./metrics/metrics.js";
import { createQueueDirectory } from "./queues/queue-directory.js";
import { agentMessage } from "./rpc/agent-message.js";
import { createAgentRpcs } from "./rpc/agents-rpc.js";
import { type ClusterAdminRpcsDeps, createClusterAdminRpcs } from "./rpc/cluster-admin-rpc.js";
import { createClusterRpcs } from "./rpc/clusters-rpc.js";
import { createQueueRpcs } from "./rpc/queues-rpc.js";
import type { AgentRepository } from "./store/agent-repository.js";
import type { ClusterRepository } from "./store/cluster-repository.js";
import type { MaintainerRepository } from "./store/maintainer-repository.js";
import type { QueueRepository } from "./store/queue-repository.js";

/** What the agents service is made of. */
export interface AgentsServiceDeps {
  clusters: ClusterRepository;
  queues: QueueRepository;
  maintainers: MaintainerRepository;
  agents: AgentRepository;
  builds: BuildsClient;
  events: EventPublisher;
  logger: Logger;
  config: Pick<AgentsConfig, "pingIntervalS" | "heartbeatIntervalS" | "jobStatusIntervalS" | "lostAfterMs">;
  now?: () => Date;
  /** How long a cached agent is trusted (default 60 s; changes announced by any process drop it at once). */
  agentCacheTtlMs?: number;
  /** A cluster's pipelines, asked before it is deleted (rpc/cluster-pipelines.ts); without it, none are asked. */
  pipelinesOf?: ClusterAdminRpcsDeps["pipelinesOf"];
  /**
   * Where agents' state events wait until JetStream has them (events/agent-events.ts); without it, an outbox in memory
   * that publishes through `events` (unit tests).
   */
  outbox?: { store: OutboxStore; publish: RawPublish; graceMs?: number };
}

/**
 * The agents service and the duties its process runs in the background: `flushLiveness` (write the sightings
 * noted by pings), `sweepLost` (mark silent agents lost), `refreshHints` (re-read what waits for an agent),
 * `relayOutbox` (publish state events a process recorded but did not publish: events/agent-events.ts), and the
 * handlers of the events it follows (`jobChanged`, `agentChanged`) and of their loss (`jobEventsMissed`,
 * `agentEventsMissed`: a subscription broke, so what those events keep current may be stale).
 */
export function createAgentsDomain(deps: AgentsServiceDeps) {
  const now = deps.now ?? (() => new Date());
  const { events, logger, builds } = deps;
  const outbox = createOutbox({
    store: deps.outbox?.store ?? createMemoryOutboxStore(),
    publish: deps.outbox?.publish ?? publishAgentEvents(events),
    logger,
    now,
    resolvers: agentEventResolvers(deps.agents, now),
    ...(deps.outbox?.graceMs !== undefined ? { graceMs: deps.outbox.graceMs } : {}),
  });
  const directory = createAgentDirectory({
    repo: deps.agents,
    events,
    outbox,
    logger,
    ttlMs: deps.agentCacheTtlMs ?? 60_000,
  });
  const hints = createDispatchHints();
  const hintsRefresh = createHintsRefresh({ hints, builds });
  const queueDirectory = createQueueDirectory({ queues: deps.queues, nowMs: () => now().getTime() });
  const handoff = createJobHandoff({
    repo: deps.agents,
    directory,
    hints,
    builds,
    events,
    logger,
    now,
    dispatchPaused: async (agent) =>
      agent.clusterId !== null &&
      dispatchPausedFor(agent.queue, await queueDirectory.pausedKeys(agent.organizationId, agent.clusterId)),
    queueIdOf: async (agent) =>
      agent.clusterId === null
        ? ""
        : ((await queueDirectory.queuesOf(agent.organizationId, agent.clusterId)).find((q) => q.key === agent.queue)
            ?._id ?? ""),
  });
  // The lifecycle and liveness need each other (a sweep marks agents lost through the lifecycle); markLost is
  // resolved once both exist.
  let markLost: (agent: Parameters<ReturnType<typeof createAgentLifecycle>["markLost"]>[0]) => Promise<boolean> =
    async () => false;
  const liveness = createLiveness({
    repo: deps.agents,
    logger,
    now,
    lostAfterMs: deps.config.lostAfterMs,
    markLost: (agent) => markLost(agent),
  });
  const pausing = createAgentPausing({ directory, logger, now });
  const lifecycle = createAgentLifecycle({
    clusters: deps.clusters,
    directory,
    pausing,
    liveness,
    handoff,
    builds,
    events,
    logger,
    now,
    config: deps.config,
    queueKeys: async (organizationId, clusterId) =>
      (await queueDirectory.queuesOf(organizationId, clusterId)).map((q) => q.key),
  });
  markLost = lifecycle.markLost;
  const metrics = createMetrics({ repo: deps.agents, builds });

  const service: ServiceImpl<typeof AgentsService> = {
    ...createClusterRpcs({ clusters: deps.clusters, events, now }),
    ...createQueueRpcs({
      clusters: deps.clusters,
      queues: deps.queues,
      agents: deps.agents,
      directory: queueDirectory,
      now,
      // A streaming agent is not pinging: its gateway asks for it when told the agent changed (docs/compatibility.md
      // #streaming-pings). Bounded: past it, the streams' own recheck finds them within seconds.
      resumed: async (queue) => {
        const idle = await deps.agents.idleAgentsOfQueue(queue.organizationId, queue.clusterId, queue.key, 1_000);
        for (const agent of idle) {
          await events.publish(SUBJECTS.agents.agentChanged, AgentChangedSchema, {
            agent: agentMessage(agent),
            previousState: agent.connectionState,
          });
        }
      },
    }),
    ...createClusterAdminRpcs({
      clusters: deps.clusters,
      queues: deps.queues,
      maintainers: deps.maintainers,
      agents: deps.agents,
      directory: queueDirectory,
      events,
      now,
      ...(deps.pipelinesOf ? { pipelinesOf: deps.pipelinesOf } : {}),
    }),
    ...createAgentRpcs({ agents: deps.agents, clusters: deps.clusters, lifecycle, pausing, handoff, metrics }),
  };

  return {
    service,
    flushLiveness: () => liveness.flush(),
    sweepLost: () => liveness.sweep(),
    refreshHints: () => hintsRefresh.run(),
    relayOutbox: () => outbox.relay(),
    jobChanged: (job: Job) => hints.jobChanged(job),
    agentChanged: (agentId: string) => directory.evict(agentId),
    jobEventsMissed: () => hintsRefresh.resume(),
    agentEventsMissed: () => directory.clear(),
  };
}

export type AgentsDomain = ReturnType<typeof createAgentsDomain>;
