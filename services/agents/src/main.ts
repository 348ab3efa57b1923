import { AgentChangedSchema, AgentsService } from "@conveyor/proto/agents";
import { BuildsService, JobStateChangedSchema } from "@conveyor/proto/builds";
import { createServiceClient, runService, SUBJECTS, subscribeEvents } from "@conveyor/runtime";
import { createMongoAgentRepository } from "./agent-repository.js";
import { createAgentsDomain } from "./agents-service.js";
import { createMongoClusterRepository } from "./cluster-repository.js";
import { readAgentsConfig } from "./config.js";

/** How often sightings are written, silent agents looked for, and waiting jobs re-read. */
const FLUSH_MS = 3_000;
const SWEEP_MS = 5_000;
const HINTS_MS = 3_000;

void runService(
  {
    name: "agents",
    serviceNames: [AgentsService.typeName],
    async setup({ db, nats, events, logger, env }) {
      const config = readAgentsConfig(env);
      const [clusters, agents] = await Promise.all([createMongoClusterRepository(db), createMongoAgentRepository(db)]);
      const builds = createServiceClient(BuildsService, config.buildsUrl);
      const domain = createAgentsDomain({ clusters, agents, builds, events, logger, config });
      // Every process needs every job and agent change (they update its own hints and caches): plain subscriptions.
      subscribeEvents(nats, SUBJECTS.builds.jobStateChanged, JobStateChangedSchema, logger, (e) => {
        if (e.job) domain.jobChanged(e.job);
      });
      subscribeEvents(nats, SUBJECTS.agents.agentChanged, AgentChangedSchema, logger, (e) => {
        if (e.agent) domain.agentChanged(e.agent.id);
      });
      const every = (ms: number, what: string, work: () => Promise<unknown>) =>
        setInterval(() => work().catch((err) => logger.warn({ err }, `${what} failed`)), ms).unref();
      every(FLUSH_MS, "liveness flush", domain.flushLiveness);
      every(SWEEP_MS, "lost agent sweep", domain.sweepLost);
      every(HINTS_MS, "dispatch hints refresh", domain.refreshHints);
      void domain.refreshHints().catch((err) => logger.warn({ err }, "dispatch hints not loaded yet"));
      return (router) => router.service(AgentsService, domain.service);
    },
  },
  process.env,
);
