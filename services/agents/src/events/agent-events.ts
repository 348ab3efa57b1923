/**
 * The agents service's connection-state events (agent_connected, agent_disconnected for a disconnected or stopped
 * agent, agent_lost, agent_stopping), which organization webhooks announce (services/notifications), go through the
 * outbox as marked writes (the runtime's marked-events.ts), as the builds service's state events do: recorded before
 * the agent's write, the write's mark stored in the agent's `eventMarks` by the write itself, published after it
 * under the entry's message id, and published by the relay (every process) when the process died in between
 * (docs/notifications.md#at-least-once-from-the-write-on).
 *
 * The other events stay plain publishes, best effort: agent_changed (agents' caches, gateways' streams),
 * job_dispatched (a streaming agent's wake-up) and credential_revoked (gateways' credential caches) are hints whose
 * consumers heal by themselves (a TTL, a periodic recheck).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AgentChangedSchema } from "@conveyor/proto/agents";
import {
  type EventPublisher,
  encodeEvent,
  markedEventKey,
  markedEventResolver,
  type OutboxEvent,
  type OutboxResolver,
  publishThroughEvents,
  type RawPublish,
  SUBJECTS,
} from "@conveyor/runtime";
import { agentMessage } from "../rpc/agent-message.js";
import type { AgentDoc, AgentRepository, AgentUpdate, ConnectionState } from "../store/agent-repository.js";

/** The outbox prefix of agents' state events; the relay resolves it with agentEventResolvers. */
export const AGENT_EVENT = "agent-event";

/** The outbox key of an agent's state event: the agent and the mark of its write. */
export const agentEventKey = (agentId: string, mark: string) => markedEventKey(AGENT_EVENT, agentId, mark);

/** The subject announcing that an agent entered a connection state, for the states that have one. */
const STATE_SUBJECTS: Partial<Record<ConnectionState, string>> = {
  connected: SUBJECTS.agents.agentConnected,
  disconnected: SUBJECTS.agents.agentDisconnected,
  stopped: SUBJECTS.agents.agentDisconnected,
  lost: SUBJECTS.agents.agentLost,
  stopping: SUBJECTS.agents.agentStopping,
};

/**
 * The subject of the state event an update announces: the new state's, when it sets a state other than the one the
 * writer's copy shows and that state has one; otherwise none (the update announces agent_changed only).
 */
export function stateSubjectOf(previous: ConnectionState, update: Pick<AgentUpdate, "connectionState">) {
  const next = update.connectionState;
  return next !== undefined && next !== previous ? STATE_SUBJECTS[next] : undefined;
}

/** What an agent's events carry: the agent and the state it left. */
export const agentChange = (
  agent: AgentDoc,
  previousState: ConnectionState,
): MessageInitShape<typeof AgentChangedSchema> => ({ agent: agentMessage(agent), previousState });

/** An agent's state event under `subject`, encoded for the outbox. */
export const agentStateEvent = (subject: string, agent: AgentDoc, previousState: ConnectionState): OutboxEvent =>
  encodeEvent(subject, AgentChangedSchema, agentChange(agent, previousState));

/** The outbox resolvers of the agents service: a state event is published once its agent bears its write's mark. */
export function agentEventResolvers(
  repo: Pick<AgentRepository, "findAgent">,
  now: () => Date,
): Record<string, OutboxResolver> {
  return { [AGENT_EVENT]: markedEventResolver(async (id) => (await repo.findAgent(id))?.eventMarks, now) };
}

/** Publishes recorded events through the EventPublisher of a process without NATS (unit tests). */
export const publishAgentEvents = (events: EventPublisher): RawPublish =>
  publishThroughEvents(events, {}, AgentChangedSchema);
