import { AgentChangedSchema, JobDispatchedSchema } from "@conveyor/proto/agents";
import { JobStateChangedSchema } from "@conveyor/proto/builds";
import { type Logger, SUBJECTS, subscribeEvents } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import type { AgentStreams } from "./agent-streams.js";

/** The core NATS subject (nothing kept) on which a gateway says it now holds an agent's stream. */
export const STREAM_HELD_SUBJECT = "live.agents.stream_held";

/** Tells the other gateways that this one holds the agent's newest stream. */
export function announceStream(nc: NatsConnection): (agentId: string, streamId: string) => void {
  return (agentId, streamId) => nc.publish(`${STREAM_HELD_SUBJECT}.${agentId}`, streamId);
}

/**
 * Feeds the streams this gateway holds from the events every gateway hears: agent_changed (pause, resume, stop, a
 * job's end), job_dispatched (a job assigned to it, by its poll or its stream), job_state_changed (a job became runnable) and the other
 * gateways' announcements of a newer stream. A subscription that breaks has every stream's agent asked after soon
 * (events may have been missed). Returns a function that stops them.
 */
export function followStreamEvents(nc: NatsConnection, streams: AgentStreams, logger: Logger): () => Promise<void> {
  const stops = [
    subscribeEvents(
      { nc },
      SUBJECTS.agents.agentChanged,
      AgentChangedSchema,
      logger,
      (e) => {
        if (e.agent) void streams.agentChanged(e.agent);
      },
      () => streams.recheckAll(),
    ),
    subscribeEvents(
      { nc },
      SUBJECTS.agents.jobDispatched,
      JobDispatchedSchema,
      logger,
      (e) => streams.jobDispatched(e.agentId, e.jobId),
      () => streams.recheckAll(),
    ),
    subscribeEvents(
      { nc },
      SUBJECTS.builds.jobStateChanged,
      JobStateChangedSchema,
      logger,
      (e) => {
        const job = e.job;
        if (job?.state === "scheduled" && job.type === "script") {
          void streams.jobRunnable({
            id: job.id,
            organizationId: job.organizationId,
            clusterId: job.clusterId,
            agentQueryRules: job.agentQueryRules,
          });
        }
      },
      () => streams.recheckAll(),
    ),
  ];
  const held = nc.subscribe(`${STREAM_HELD_SUBJECT}.*`, {
    callback: (err, msg) => {
      if (err) return;
      streams.replacedElsewhere(msg.subject.slice(STREAM_HELD_SUBJECT.length + 1), msg.string());
    },
  });
  return async () => {
    held.unsubscribe();
    await Promise.all(stops.map((stop) => stop()));
  };
}
