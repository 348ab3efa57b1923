/**
 * Buildkite's notification event names (docs/notifications.md#events) and which of the services' events
 * (docs/architecture.md#events) each one is. Pure.
 */

/** The events an organization webhook may choose, as Buildkite names them. */
export const WEBHOOK_EVENTS = [
  "ping",
  "build.scheduled",
  "build.running",
  "build.failing",
  "build.finished",
  "build.skipped",
  "job.scheduled",
  "job.started",
  "job.finished",
  "job.activated",
  "agent.connected",
  "agent.lost",
  "agent.disconnected",
  "agent.stopping",
  "agent.stopped",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

const KNOWN = new Set<string>(WEBHOOK_EVENTS);

/** Whether `name` is one of Buildkite's webhook events. */
export function isWebhookEvent(name: string): name is WebhookEvent {
  return KNOWN.has(name);
}

/**
 * The build event a builds-service event is, or null. `build_finished` alone announces the end (the service also
 * publishes `build_state_changed` for it, which is not counted twice); a build that stops at a block step is
 * finished for Buildkite (`build.finished` "passed, failed, been blocked, or been canceled").
 */
export function buildEventName(kind: string, state: string, previousState: string): WebhookEvent | null {
  if (kind === "build_finished") return state === "skipped" ? "build.skipped" : "build.finished";
  if (kind === "build_created") {
    if (state === "scheduled") return "build.scheduled";
    if (state === "skipped") return "build.skipped";
    if (state === "running") return "build.running";
    return null;
  }
  if (kind !== "build_state_changed" || state === previousState) return null;
  switch (state) {
    case "scheduled":
      return "build.scheduled";
    case "running":
      // Back to running from failing is not a start.
      return previousState === "failing" ? null : "build.running";
    case "failing":
      return "build.failing";
    case "blocked":
      return "build.finished";
    default:
      return null;
  }
}

const JOB_FINISHED = new Set(["passed", "failed", "timed_out", "canceled", "skipped", "broken", "expired"]);

/**
 * The job event a job_state_changed is, or null: scheduled when it starts waiting for an agent, started when an
 * agent runs it, finished when it ends, activated when a block step is unblocked.
 */
export function jobEventName(type: string, state: string, previousState: string): WebhookEvent | null {
  if (state === previousState) return null;
  if (type === "manual") return state === "unblocked" ? "job.activated" : null;
  if (state === "scheduled") return "job.scheduled";
  if (state === "running") return "job.started";
  if (JOB_FINISHED.has(state)) return "job.finished";
  return null;
}

/** The agent event of an agent's new connection state, or null (agent_changed and job_dispatched are none). */
export function agentEventName(kind: string, connectionState: string): WebhookEvent | null {
  switch (kind) {
    case "agent_connected":
      return "agent.connected";
    case "agent_lost":
      return "agent.lost";
    case "agent_stopping":
      return "agent.stopping";
    case "agent_disconnected":
      return connectionState === "stopped" ? "agent.stopped" : "agent.disconnected";
    default:
      return null;
  }
}
