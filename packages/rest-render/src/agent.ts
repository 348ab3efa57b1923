import { create } from "@bufbuild/protobuf";
import type { Agent } from "@conveyor/proto/agents";
import { UserSchema as ProtoUserSchema } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { Bool, Nullable, NullableInt, NullableStr, NullableTimestamp, Str } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";
import { renderUser, UserSchema } from "./user.js";

/** Who paused the agent over REST, as a User; null when it paused itself from a job or is not paused. */
function pausedBy(agent: Agent) {
  const by = agent.pausedBy;
  if (!agent.paused || !by?.id) return null;
  const { id, name, email, avatarUrl, createdAt } = by;
  return renderUser(create(ProtoUserSchema, { id, name, email, avatarUrl, ...(createdAt ? { createdAt } : {}) }));
}

/** The REST Agent (docs/compatibility.md#go-buildkite) of an organization. */
export function renderAgent(agent: Agent, view: { urls: Urls; orgSlug: string }): AgentBody {
  const path = `organizations/${view.orgSlug}/agents/${agent.id}`;
  return {
    id: agent.id,
    graphql_id: graphqlId("Agent", agent.id),
    url: view.urls.api(path),
    web_url: view.urls.web(path),
    name: agent.name,
    connection_state: agent.connectionState,
    hostname: agent.hostname,
    ip_address: agent.ipAddress,
    user_agent: agent.userAgent,
    version: agent.version,
    os_id: agent.os,
    arch: agent.arch,
    queue: agent.queue,
    creator: null,
    created_at: isoTime(agent.createdAt),
    connected_at: isoTime(agent.connectedAt),
    disconnected_at: isoTime(agent.disconnectedAt),
    lost_at: isoTime(agent.lostAt),
    stopped_at: isoTime(agent.stoppedAt),
    last_job_finished_at: isoTime(agent.lastJobFinishedAt),
    priority: agent.priority ?? null,
    meta_data: agent.metaData,
    paused: agent.paused,
    paused_at: isoTime(agent.pausedAt),
    paused_note: agent.pausedNote === "" ? null : agent.pausedNote,
    paused_by: pausedBy(agent),
    paused_timeout_in_minutes: agent.paused ? (agent.pausedTimeoutInMinutes ?? null) : null,
    cluster_id: agent.clusterId === "" ? null : agent.clusterId,
    job: agent.currentJobId === "" ? null : { id: agent.currentJobId },
  };
}

/** The REST Agent's response schema (fast serialization; nothing else leaks, the access token least of all). */
export const AgentSchema = Type.Object({
  id: Str,
  graphql_id: Str,
  url: Str,
  web_url: Str,
  name: Str,
  connection_state: Str,
  hostname: Str,
  ip_address: Str,
  user_agent: Str,
  version: Str,
  os_id: Str,
  arch: Str,
  queue: Str,
  creator: Type.Null(),
  created_at: NullableTimestamp,
  connected_at: NullableTimestamp,
  disconnected_at: NullableTimestamp,
  lost_at: NullableTimestamp,
  stopped_at: NullableTimestamp,
  last_job_finished_at: NullableTimestamp,
  priority: NullableInt,
  meta_data: Type.Array(Str),
  paused: Bool,
  paused_at: NullableTimestamp,
  paused_note: NullableStr,
  paused_by: Nullable(UserSchema),
  paused_timeout_in_minutes: NullableInt,
  cluster_id: NullableStr,
  job: Nullable(Type.Object({ id: Str })),
});
export type AgentBody = Static<typeof AgentSchema>;
