import { lenientJson } from "@conveyor/deploy";
import { Role } from "@conveyor/proto/identity";
import { agents, api, arrangeCluster, arrangeOrgUser, send, stack, unique } from "../stack-env.js";

// The fixtures the agent API fuzzer drives: an organization with a cluster, a registration token of it and a
// pipeline in it; a registered, connected agent; and a job that agent has accepted (its job token). A fuzzed request
// that is valid may use them up (finish or abandon the job, disconnect or stop the agent): `ensure` then arranges a
// new agent and a new job, and keeps the old credentials as wrong ones to send.

const SCOPES = [
  "read_builds",
  "write_builds",
  "read_pipelines",
  "write_pipelines",
  "read_agents",
  "write_agents",
  "read_artifacts",
  "read_build_logs",
];

/** Job states in which the agent holds the job and the job routes reach it. */
const HELD = new Set(["accepted", "running"]);

type Json = Record<string, unknown>;

/** An agent API call with a `Token` credential, as buildkite-agent makes it. */
export async function agentCall(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${stack.agentUrl.replace(/\/v3\/?$/, "")}${path}`, {
    method,
    headers: {
      authorization: `Token ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const parsed = lenientJson(text);
  return { status: res.status, text, body: parsed as Json | undefined };
}

/** The fuzzer's agent fixtures; the fields change when `ensure` arranges new ones. */
export interface AgentWorld {
  org: { id: string; slug: string; secret: string };
  clusterId: string;
  /** The cluster's agent registration token. */
  registration: string;
  /** The pipeline the world's builds are created in. */
  pipelineSlug: string;
  agentId: string;
  agentSecret: string;
  /** The accepted job, its token, and its build (by id, number and pipeline slug). */
  jobId: string;
  jobSecret: string;
  buildId: string;
  buildNumber: string;
  buildPipeline: string;
  /** Credentials of fixtures used up (revoked job tokens, agents that left), and their job and build ids. */
  stale: { secrets: string[]; jobIds: string[]; buildIds: string[] };
  /** How many times the agent and job were arranged. */
  arranged: number;
}

/** Registers and connects an agent of the default queue with the registration token. */
async function arrangeAgent(registration: string): Promise<{ id: string; secret: string }> {
  const res = await agentCall("POST", "/v3/register", registration, {
    name: unique("fuzz-agent"),
    hostname: "fuzz",
    version: "3.137.0",
    meta_data: ["queue=default"],
  });
  if (res.status !== 200) throw new Error(`agent register: ${res.status} ${res.text}`);
  const id = String(res.body?.id);
  const secret = String(res.body?.access_token);
  const connected = await agentCall("POST", "/v3/connect", secret);
  if (connected.status !== 200) throw new Error(`agent connect: ${connected.status} ${connected.text}`);
  return { id, secret };
}

/**
 * Creates a build and has the agent take a job as buildkite-agent does: ping until one is offered, accept it, and
 * with `start`, start it (so that the routes of a running job, finish and log chunks, are reached valid too). The
 * job offered may be an older one waiting in the cluster: its build becomes the world's build.
 */
async function takeJob(w: AgentWorld, start: boolean): Promise<void> {
  const base = `/v2/organizations/${w.org.slug}`;
  const build = await send("POST", `${base}/pipelines/${w.pipelineSlug}/builds`, w.org.secret, {
    commit: "HEAD",
    branch: "main",
    message: "agent fuzz",
  });
  if (build.status !== 201) throw new Error(`build: ${build.status} ${build.text}`);
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    const ping = await agentCall("GET", "/v3/ping", w.agentSecret);
    if (ping.status !== 200) throw new Error(`ping: ${ping.status} ${ping.text}`);
    const offered = (ping.body?.job as Json | undefined)?.id;
    if (typeof offered === "string") {
      const accepted = await agentCall("PUT", `/v3/jobs/${offered}/accept`, w.agentSecret);
      if (accepted.status !== 200) throw new Error(`accept: ${accepted.status} ${accepted.text}`);
      const env = (accepted.body?.env ?? {}) as Record<string, string>;
      w.jobId = offered;
      w.jobSecret = String(accepted.body?.token);
      w.buildId = env.BUILDKITE_BUILD_ID ?? "";
      w.buildNumber = env.BUILDKITE_BUILD_NUMBER ?? "";
      w.buildPipeline = env.BUILDKITE_PIPELINE_SLUG ?? "";
      if (start) {
        const started = await agentCall("PUT", `/v3/jobs/${offered}/start`, w.jobSecret, {});
        if (started.status !== 200) throw new Error(`start: ${started.status} ${started.text}`);
      }
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error("no job was offered to the fuzz agent within 30 s");
}

/** Arranges the organization, its cluster, registration token and pipeline, an agent and an accepted job. */
export async function arrangeAgentWorld(): Promise<AgentWorld> {
  const owner = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  const org = { id: owner.organization.id, slug: owner.organization.slug, secret: owner.secret };
  const clusterId = await arrangeCluster(org.id);
  const token = await agents.createAgentToken({ organizationId: org.id, clusterId, description: "agent fuzz" });
  const pipeline = await send("POST", `/v2/organizations/${org.slug}/pipelines`, org.secret, {
    name: unique("AgentFuzz"),
    repository: "git@github.com:acme/agent-fuzz.git",
    cluster_id: clusterId,
    configuration: "steps:\n  - command: make test\n",
  });
  if (pipeline.status !== 201) throw new Error(`pipeline: ${pipeline.status} ${pipeline.text}`);
  const agent = await arrangeAgent(token.secret);
  const w: AgentWorld = {
    org,
    clusterId,
    registration: token.secret,
    pipelineSlug: String(pipeline.body.slug),
    agentId: agent.id,
    agentSecret: agent.secret,
    jobId: "",
    jobSecret: "",
    buildId: "",
    buildNumber: "",
    buildPipeline: "",
    stale: { secrets: [], jobIds: [], buildIds: [] },
    arranged: 1,
  };
  await takeJob(w, false);
  return w;
}

/**
 * Whether the world's agent still holds its job, connected: the job token reads a held job, and the REST API shows
 * the agent connected with that job. (A paused agent still holds its job.)
 */
export async function intact(w: AgentWorld): Promise<boolean> {
  const job = await agentCall("GET", `/v3/jobs/${w.jobId}`, w.jobSecret);
  if (job.status !== 200 || !HELD.has(String(job.body?.state))) return false;
  const agent = await api(`/v2/organizations/${w.org.slug}/agents/${w.agentId}`, w.org.secret);
  return agent.status === 200 && agent.body.connection_state === "connected" && agent.body.job?.id === w.jobId;
}

/** Arranges a new agent and job when a fuzzed request used up the old ones; resolves whether it did. */
export async function ensure(w: AgentWorld): Promise<boolean> {
  if (await intact(w)) return false;
  w.stale.secrets.push(w.agentSecret, w.jobSecret);
  w.stale.jobIds.push(w.jobId);
  w.stale.buildIds.push(w.buildId);
  const agent = await arrangeAgent(w.registration);
  w.agentId = agent.id;
  w.agentSecret = agent.secret;
  w.arranged++;
  // Every other job is running, the others only accepted.
  await takeJob(w, w.arranged % 2 === 0);
  return true;
}

/**
 * Heartbeats for the world's current agent every `everyMs` (the stack marks an agent lost after 6 s); stop() ends
 * them. A heartbeat that could not be sent is logged: the agent may then be lost, and `ensure` arranges a new one.
 */
export function keepAlive(w: AgentWorld, everyMs = 1500): { stop: () => void } {
  const timer = setInterval(() => {
    agentCall("POST", "/v3/heartbeat", w.agentSecret, { sent_at: new Date().toISOString() }).catch((err: unknown) =>
      process.stderr.write(`[fuzz agent] heartbeat not sent: ${err instanceof Error ? err.message : String(err)}\n`),
    );
  }, everyMs);
  return { stop: () => clearInterval(timer) };
}
