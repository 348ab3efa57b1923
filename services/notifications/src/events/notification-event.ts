import type { Agent } from "@conveyor/proto/agents";
import { AgentChangedSchema } from "@conveyor/proto/agents";
import { type Build, BuildChangedSchema, type Job, JobStateChangedSchema } from "@conveyor/proto/builds";
import { decodeEvent } from "@conveyor/runtime";

/**
 * One event of the builds or agents service, decoded, as the handlers see it. `kind` is the subject's last part
 * (build_created, build_state_changed, build_finished, job_state_changed, agent_connected, …).
 */
export type NotificationEvent =
  | { type: "build"; kind: string; seq: number; build: Build; previousState: string }
  | {
      type: "job";
      kind: string;
      seq: number;
      job: Job;
      previousState: string;
      organizationId: string;
      pipelineId: string;
      buildNumber: number;
    }
  | { type: "agent"; kind: string; seq: number; agent: Agent; previousState: string };

const BUILD_KINDS = new Set(["build_created", "build_state_changed", "build_finished"]);
const AGENT_KINDS = new Set(["agent_connected", "agent_disconnected", "agent_lost", "agent_stopping"]);

/**
 * Decodes a message of `ci.builds.>` or `ci.agents.>` into an event the handlers look at, or null for the events
 * notifications never come from (pipeline counters, agent_changed, job_dispatched, credential_revoked).
 */
export function decodeNotificationEvent(subject: string, data: Uint8Array, seq: number): NotificationEvent | null {
  const [, domain, kind = ""] = subject.split(".");
  if (domain === "builds" && BUILD_KINDS.has(kind)) {
    const e = decodeEvent(BuildChangedSchema, data);
    return e.build ? { type: "build", kind, seq, build: e.build, previousState: e.previousState } : null;
  }
  if (domain === "builds" && kind === "job_state_changed") {
    const e = decodeEvent(JobStateChangedSchema, data);
    if (!e.job) return null;
    return {
      type: "job",
      kind,
      seq,
      job: e.job,
      previousState: e.previousState,
      organizationId: e.organizationId,
      pipelineId: e.pipelineId,
      buildNumber: e.buildNumber,
    };
  }
  if (domain === "agents" && AGENT_KINDS.has(kind)) {
    const e = decodeEvent(AgentChangedSchema, data);
    return e.agent ? { type: "agent", kind, seq, agent: e.agent, previousState: e.previousState } : null;
  }
  return null;
}

/** The organization an event belongs to. */
export function organizationOf(e: NotificationEvent): string {
  if (e.type === "build") return e.build.organizationId;
  if (e.type === "job") return e.organizationId;
  return e.agent.organizationId;
}
