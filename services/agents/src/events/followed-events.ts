import { AgentChangedSchema } from "@conveyor/proto/agents";
import { JobStateChangedSchema } from "@conveyor/proto/builds";
import { type Logger, type NatsHandle, SUBJECTS, subscribeEvents } from "@conveyor/runtime";
import type { AgentsDomain } from "../agents-service.js";

/**
 * Follows the job and agent changes every process of the agents service needs (each keeps its own dispatch hints
 * and agent cache current from them): plain subscriptions, watched by the runtime. When one breaks, events may have
 * been missed: the cached agents are dropped, and the next hints refresh reads the whole list. Returns a function
 * that stops both.
 */
export function followEvents(
  nats: Pick<NatsHandle, "nc">,
  domain: Pick<AgentsDomain, "jobChanged" | "agentChanged" | "jobEventsMissed" | "agentEventsMissed">,
  logger: Logger,
): () => Promise<void> {
  const stops = [
    subscribeEvents(
      nats,
      SUBJECTS.builds.jobStateChanged,
      JobStateChangedSchema,
      logger,
      (e) => {
        if (e.job) domain.jobChanged(e.job);
      },
      () => domain.jobEventsMissed(),
    ),
    subscribeEvents(
      nats,
      SUBJECTS.agents.agentChanged,
      AgentChangedSchema,
      logger,
      (e) => {
        if (e.agent) domain.agentChanged(e.agent.id);
      },
      () => domain.agentEventsMissed(),
    ),
  ];
  return async () => {
    await Promise.all(stops.map((stop) => stop()));
  };
}
