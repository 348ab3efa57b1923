import type { ServiceImpl } from "@connectrpc/connect";
import type { AgentsService } from "@conveyor/proto/agents";
import type { Job } from "@conveyor/proto/builds";
import type { EventPublisher, Logger } from "@conveyor/runtime";
import { createAgentDirectory } from "./agent-directory.js";
import { createAgentLifecycle } from "./agent-lifecycle.js";
import { createAgentPausing } from "./agent-pausing.js";
import type { AgentRepository } from "./agent-repository.js";
import { createAgentRpcs } from "./agents-rpc.js";
import type { ClusterRepository } from "./cluster-repository.js";
import { createClusterRpcs } from "./clusters-rpc.js";
import type { AgentsConfig } from "./config.js";
import { createDispatchHints, REFRESH_LIMIT } from "./dispatch-hints.js";
import { type BuildsClient, createJobHandoff } from "./job-handoff.js";
import { createLiveness } from "./liveness.js";
import { createMetrics } from "./metrics.js";

/** Refreshes skipped after one that was cut at its limit (so, with a refresh every 3 s, one every 30 s). */
export const TRUNCATED_REFRESH_SKIPS = 9;

export interface AgentsServiceDeps {
  clusters: ClusterRepository;
  agents: AgentRepository;
  builds: BuildsClient;
  events: EventPublisher;
  logger: Logger;
  config: Pick<AgentsConfig, "pingIntervalS" | "heartbeatIntervalS" | "jobStatusIntervalS" | "lostAfterMs">;
  now?: () => Date;
  /** How long a cached agent is trusted (default 60 s; changes announced by any process drop it at once). */
  agentCacheTtlMs?: number;
}

/**
 * The agents service and the duties its process runs in the background: `flushLiveness` (write the sightings
 * noted by pings), `sweepLost` (mark silent agents lost), `refreshHints` (re-read what waits for an agent), and the
 * handlers of the events it follows (`jobChanged`, `agentChanged`).
 */
export function createAgentsDomain(deps: AgentsServiceDeps) {
  const now = deps.now ?? (() => new Date());
  const { events, logger, builds } = deps;
  const directory = createAgentDirectory({
    repo: deps.agents,
    events,
    logger,
    ttlMs: deps.agentCacheTtlMs ?? 60_000,
  });
  const hints = createDispatchHints();
  // A refresh cut at its limit only adds jobs that events missed among the first thousand (it cannot tell what
  // else left the queue), and reading that many costs the database most: it is then done one time in ten.
  let refreshesToSkip = 0;
  const handoff = createJobHandoff({ repo: deps.agents, directory, hints, builds, events, logger, now });
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
  });
  markLost = lifecycle.markLost;
  const metrics = createMetrics({ repo: deps.agents, builds });

  const service: ServiceImpl<typeof AgentsService> = {
    ...createClusterRpcs({ clusters: deps.clusters, events, now }),
    ...createAgentRpcs({ agents: deps.agents, clusters: deps.clusters, lifecycle, pausing, handoff, metrics }),
  };

  return {
    service,
    flushLiveness: () => liveness.flush(),
    sweepLost: () => liveness.sweep(),
    async refreshHints(): Promise<void> {
      if (refreshesToSkip > 0) {
        refreshesToSkip--;
        return;
      }
      const since = hints.ticket();
      const { jobs } = await builds.listDispatchableJobs({ limit: REFRESH_LIMIT });
      const truncated = jobs.length >= REFRESH_LIMIT;
      hints.replace(jobs, truncated, since);
      refreshesToSkip = truncated ? TRUNCATED_REFRESH_SKIPS : 0;
    },
    jobChanged: (job: Job) => hints.jobChanged(job),
    agentChanged: (agentId: string) => directory.evict(agentId),
  };
}

export type AgentsDomain = ReturnType<typeof createAgentsDomain>;
