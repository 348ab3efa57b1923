/**
 * What the benchmarks that play an agent share: the agent API and REST calls as buildkite-agent and a script make
 * them, a simulated agent running a build's job, and a process's resident memory.
 */
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { AgentsService } from "@conveyor/proto/agents";
import { createServiceClient } from "@conveyor/runtime";
import { lenientJson } from "../rest/lenient-json.js";

/** A running stack as these benchmarks reach it. */
export interface AgentApiTarget {
  apiUrl: string;
  /** The agent API's base (…/v3). */
  agentUrl: string;
  apiToken: string;
  orgSlug: string;
  /** The agents service, for a cluster and its agent token. */
  agentsUrl: string;
}

/** A process's resident memory in MiB; undefined without a pid or once the process is gone. */
export function rssMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8")
      .split("\n")
      .find((l) => l.startsWith("VmRSS:"));
    return line ? Number(line.replace(/\D+/g, "")) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** An agent API call with a `Token` credential, as buildkite-agent makes it; a status of 300 or more throws. */
export async function agentCall(target: AgentApiTarget, method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${target.agentUrl.replace(/\/v3\/?$/, "")}${path}`, {
    method,
    headers: { authorization: `Token ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return lenientJson(text) as Record<string, unknown>;
}

/** A REST call with the bench's token under its organization, timed: its status, time and JSON, whatever the status. */
export async function restAnswer(target: AgentApiTarget, method: string, path: string, body?: unknown) {
  const started = performance.now();
  const res = await fetch(`${target.apiUrl}/v2/organizations/${target.orgSlug}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${target.apiToken}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const ms = performance.now() - started;
  return { status: res.status, ms, text, value: (lenientJson(text) ?? {}) as Record<string, unknown> };
}

/** A REST call with the bench's token under its organization; a status of 300 or more throws. */
export async function rest(target: AgentApiTarget, method: string, path: string, body?: unknown) {
  const answer = await restAnswer(target, method, path, body);
  if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${answer.text}`);
  return lenientJson(answer.text) as Record<string, unknown>;
}

/** A cluster of the bench's organization, and its agent registration token. */
export async function benchCluster(target: AgentApiTarget, name: string) {
  const org = await rest(target, "GET", "");
  const agents = createServiceClient(AgentsService, target.agentsUrl);
  const { cluster } = await agents.createCluster({ organizationId: String(org.id), name });
  const token = await agents.createAgentToken({ organizationId: String(org.id), clusterId: cluster?.id ?? "" });
  return { org, clusterId: cluster?.id ?? "", agentToken: token.secret };
}

/**
 * A cluster, a pipeline in it (one step unless `configuration` says otherwise), a build, and a simulated agent
 * running its first job (accepted and started).
 */
export async function runningJob(target: AgentApiTarget, configuration = "steps:\n  - command: make live\n") {
  const stamp = Date.now();
  const { org, clusterId, agentToken } = await benchCluster(target, `bench-${stamp}`);
  const pipeline = await rest(target, "POST", "/pipelines", {
    name: `bench ${stamp}`,
    repository: "git@example.com:bench/live.git",
    cluster_id: clusterId,
    configuration,
  });
  const build = await rest(target, "POST", `/pipelines/${pipeline.slug}/builds`, {
    commit: "HEAD",
    branch: "main",
    message: "bench",
  });
  const agent = await agentCall(target, "POST", "/v3/register", agentToken, {
    name: `bench-${stamp}`,
    hostname: "bench",
    version: "3.137.0",
    meta_data: ["queue=default"],
  });
  const agentSecret = String(agent.access_token);
  await agentCall(target, "POST", "/v3/connect", agentSecret);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const ping = await agentCall(target, "GET", "/v3/ping", agentSecret);
    const offered = (ping.job as Record<string, unknown> | undefined)?.id;
    if (typeof offered === "string") {
      const accepted = await agentCall(target, "PUT", `/v3/jobs/${offered}/accept`, agentSecret);
      const jobSecret = String(accepted.token);
      await agentCall(target, "PUT", `/v3/jobs/${offered}/start`, jobSecret, {});
      return {
        org,
        clusterId,
        pipelineSlug: String(pipeline.slug),
        number: Number(build.number),
        jobId: offered,
        jobSecret,
        agentSecret,
      };
    }
    await sleep(200);
  }
  throw new Error("the bench's agent was offered no job within 30 s");
}
