import type { MessageInitShape } from "@bufbuild/protobuf";
import type { GetMetricsResponseSchema, QueueMetricsSchema } from "@conveyor/proto/agents";
import { LRUCache } from "lru-cache";
import type { BuildsClient } from "../dispatch/job-handoff.js";
import type { AgentRepository } from "../store/agent-repository.js";

type Metrics = MessageInitShape<typeof GetMetricsResponseSchema>;
type QueueMetrics = Required<Omit<MessageInitShape<typeof QueueMetricsSchema>, "$typeName">>;

/** How long one organization's (or cluster's) metrics are reused: autoscalers poll every few seconds, per queue. */
const METRICS_TTL_MS = 1000;

const empty = (): QueueMetrics => ({
  agentsIdle: 0,
  agentsBusy: 0,
  agentsTotal: 0,
  jobsScheduled: 0,
  jobsRunning: 0,
  jobsWaiting: 0,
  jobsTotal: 0,
});

/**
 * The metrics endpoint's numbers for an organization, or one of its clusters: connected agents idle and busy, and unfinished jobs
 * scheduled, running and waiting, overall and per queue. Each read is one index-served query per side, and an
 * answer is reused for a second, so polling autoscalers cost almost nothing.
 */
export function createMetrics(deps: { repo: AgentRepository; builds: Pick<BuildsClient, "countQueueJobs"> }) {
  const cache = new LRUCache<string, Metrics>({
    max: 10_000,
    ttl: METRICS_TTL_MS,
    fetchMethod: async (key) => {
      const [organizationId = "", clusterId = ""] = key.split("/");
      const [agents, jobs] = await Promise.all([
        deps.repo.countAgents(organizationId, clusterId || undefined),
        deps.builds.countQueueJobs({ organizationId, clusterId }),
      ]);
      const overall = empty();
      const queues = new Map<string, QueueMetrics>();
      const queue = (name: string) => {
        const entry = queues.get(name) ?? empty();
        queues.set(name, entry);
        return entry;
      };
      for (const row of agents) {
        for (const m of [overall, queue(row.queue)]) {
          if (row.busy) m.agentsBusy += row.count;
          else m.agentsIdle += row.count;
          m.agentsTotal += row.count;
        }
      }
      for (const row of jobs.queues) {
        for (const m of [overall, queue(row.queue)]) {
          m.jobsScheduled += row.scheduled;
          m.jobsRunning += row.running;
          m.jobsWaiting += row.waiting;
          m.jobsTotal += row.scheduled + row.running + row.waiting;
        }
      }
      return { overall, queues: Object.fromEntries(queues) };
    },
  });
  return {
    /** The organization's numbers, or with `clusterId` those of its agents and jobs in that cluster. */
    async get(organizationId: string, clusterId = ""): Promise<Metrics> {
      return (await cache.fetch(`${organizationId}/${clusterId}`)) ?? { overall: empty(), queues: {} };
    },
  };
}
