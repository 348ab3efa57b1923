import type { Case } from "./access-matrix-cases.js";
import type { World } from "./access-matrix-world.js";
import { api } from "./stack-env.js";

// What the refused writes of the access matrix must leave as they found it, read back by the owners: read before
// the matrix and after it, the two must be equal. And the agent API's part of the matrix.

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are picked field by field.
type Json = any;

const pick = (items: Json[], ...keys: string[]) =>
  (Array.isArray(items) ? items : [items]).map((item) => keys.map((k) => k.split(".").reduce((v, p) => v?.[p], item)));

/** The readings, by what was read: a refused write must change none of them. */
export async function snapshot(world: World): Promise<Record<string, unknown>> {
  const { a, b, q } = world;
  const orgA = `/v2/organizations/${a.slug}`;
  const orgB = `/v2/organizations/${b.slug}`;
  const read = async (path: string, secret: string, ...keys: string[]) => {
    const res = await api(path, secret);
    return [res.status, pick(res.body, ...keys)];
  };
  const readings: Record<string, Promise<unknown>> = {
    "A pipelines": read(`${orgA}/pipelines?per_page=100`, a.adminSecret, "id", "archived_at", "description", "name"),
    "B pipelines": read(`${orgB}/pipelines?per_page=100`, b.adminSecret, "id", "archived_at", "description"),
    "A builds": read(`${orgA}/builds?per_page=100`, a.adminSecret, "id", "state", "pipeline.slug", "number"),
    "B builds": read(`${orgB}/builds?per_page=100`, b.adminSecret, "id", "state", "number"),
    "P build jobs": read(`${orgA}/pipelines/${a.pipeline.slug}/builds/1`, a.adminSecret, "jobs"),
    "Q build jobs": read(`${orgA}/pipelines/${q.slug}/builds/${q.build.number}`, a.adminSecret, "jobs"),
    "P artifacts": read(`${orgA}/pipelines/${a.pipeline.slug}/builds/1/artifacts`, a.adminSecret, "id", "state"),
    "Q artifacts": read(`${orgA}/pipelines/${q.slug}/builds/${q.build.number}/artifacts`, a.adminSecret, "id", "state"),
    "T members": read(`${orgA}/teams/${a.teamId}/members`, a.adminSecret, "user_id", "role"),
    "T pipelines": read(`${orgA}/teams/${a.teamId}/pipelines`, a.adminSecret, "pipeline_id", "access_level"),
    "T suites": read(`${orgA}/teams/${a.teamId}/suites`, a.adminSecret, "suite_id", "access_level"),
    "B team members": read(`${orgB}/teams/${b.teamId}/members`, b.adminSecret, "user_id", "role"),
    "B team pipelines": read(`${orgB}/teams/${b.teamId}/pipelines`, b.adminSecret, "pipeline_id", "access_level"),
    "A rules": read(`${orgA}/rules`, a.adminSecret, "uuid"),
    "A source providers": read(`${orgA}/source_providers`, a.adminSecret, "id", "kind"),
    "B source providers": read(`${orgB}/source_providers`, b.adminSecret, "id", "kind"),
    "A webhooks": read(`${orgA}/webhooks`, a.adminSecret, "id", "events", "description"),
    "B webhooks": read(`${orgB}/webhooks`, b.adminSecret, "id", "events", "description"),
    "B rules": read(`${orgB}/rules`, b.adminSecret, "uuid"),
    "A tokens": read(
      `/v2/packages/organizations/${a.slug}/registries/${a.registrySlug}/tokens`,
      a.adminSecret,
      "id",
      "description",
    ),
    "B tokens": read(
      `/v2/packages/organizations/${b.slug}/registries/${b.registrySlug}/tokens`,
      b.adminSecret,
      "id",
      "description",
    ),
    // By id: the list shows connected agents only, and these registered agents never connect.
    "A agent": read(`${orgA}/agents/${a.agentId}`, a.adminSecret, "id", "paused", "paused_note", "stopped_at"),
    "B agent": read(`${orgB}/agents/${b.agentId}`, b.adminSecret, "id", "paused", "paused_note", "stopped_at"),
    "owner tokens": Promise.all(
      [a.adminSecret, b.adminSecret, world.plain.secret, world.outsider.secret].map(
        async (s) => (await api("/v2/access-token", s)).status,
      ),
    ),
  };
  const entries = await Promise.all(Object.entries(readings).map(async ([k, v]) => [k, await v] as const));
  return Object.fromEntries(entries);
}

/** The agent API's matrix: every /v3 operation without a credential, and with each kind of credential it refuses. */
export function agentCases(
  world: World,
  ops: Array<{ method: string; path: string; operationId: string; credential?: string[] }>,
) {
  const { a } = world;
  const credentials: Record<string, string> = {
    "a REST API token": `Token ${a.adminSecret}`,
    "a REST API token as Bearer": `Bearer ${a.adminSecret}`,
    registration: `Token ${a.registrationSecret}`,
    agent: `Token ${a.agentSecret}`,
  };
  const cases: Case[] = [];
  for (const op of ops) {
    const path = op.path
      .replace("{id}", op.path.startsWith("/v3/builds") ? a.build.id : a.build.jobId)
      .replace("{step}", "matrix")
      .replace("{context}", "matrix");
    const base = { kind: "agent-credential" as const, operationId: op.operationId, method: op.method, path };
    const body = op.method === "GET" || op.method === "DELETE" ? undefined : {};
    cases.push({ ...base, body, expect: { status: 401 }, note: "no credential" });
    for (const [name, authorization] of Object.entries(credentials)) {
      if (op.credential?.includes(name)) continue;
      cases.push({ ...base, body, authorization, expect: { status: 401 }, note: `${name} credential` });
    }
  }
  return cases;
}

const KEY = { key: "matrix" };
/** Bodies the agent API's job routes would take from the agent holding the job, so that access alone refuses. */
const AGENT_BODIES: Record<string, unknown> = {
  agentHeaderTimes: { header_times: { "0": "2026-01-01T00:00:00Z" } },
  agentUpdateJob: { timeout_in_minutes: "5" },
  agentStepUpdate: { attribute: "label", value: "refused" },
  agentPromiseFailure: { exit_status: 3 },
  agentSetMetaData: { key: "matrix", value: "refused" },
  agentSetMetaDataBatch: { items: [{ key: "matrix", value: "refused" }] },
  agentGetMetaDataByJob: KEY,
  agentMetaDataExistsByJob: KEY,
  agentGetMetaDataByBuild: KEY,
  agentMetaDataExistsByBuild: KEY,
  agentUploadPipeline: { uuid: "9d4c5e1e-8f5a-4c1b-9a43-000000000001", pipeline: { steps: [{ command: "x" }] } },
  agentUpdateArtifacts: { artifacts: [{ id: "9d4c5e1e-8f5a-4c1b-9a43-000000000002", state: "finished" }] },
  agentCreateArtifacts: {
    id: "9d4c5e1e-8f5a-4c1b-9a43-000000000003",
    artifacts: [{ path: "refused.txt", file_size: 1, sha1sum: "0".repeat(40) }],
  },
  agentAnnotate: { body: "refused", context: "matrix", style: "info" },
  agentFinishJob: { exit_status: "0" },
};

/**
 * The agent API's job and build routes with agent credentials that hold no job there: an agent of the job's own
 * organization that holds no job, and another organization's agent. Both must get 404, as for a job that does not
 * exist (job-access.ts), whatever the body.
 */
export function agentJobCases(
  world: World,
  ops: Array<{ method: string; path: string; operationId: string; credential?: string[] }>,
) {
  const agentsHoldingNothing = {
    "an agent of the organization holding no job": `Token ${world.a.agentSecret}`,
    "another organization's agent": `Token ${world.b.agentSecret}`,
  };
  const cases: Case[] = [];
  // `--acquire-job` is how an agent of the job's cluster takes a job it does not hold: its refusals (another
  // organization's job 404, one it cannot take 422) are the agents service's tests'.
  // A route for a job's own token alone (`secret get`, docs/security.md#cluster-secrets) takes no agent's access
  // token at all: that is the wrong-kind 401 of agentCases, whatever job the agent holds.
  const held = ops.filter((o) => o.operationId !== "agentAcquireJob" && (o.credential ?? ["agent"]).includes("agent"));
  for (const op of held.filter((o) => o.path.includes("{id}") || o.path.startsWith("/v3/steps/{step}"))) {
    // A step is looked for in the build of the job the credential holds: with none, no build is found.
    const onBuild = op.path.startsWith("/v3/builds") || op.path.startsWith("/v3/steps");
    const path = op.path
      .replace("{id}", onBuild ? world.a.build.id : world.a.build.jobId)
      .replace("{step}", "matrix")
      .replace("{context}", "matrix");
    const body = op.method === "GET" || op.method === "DELETE" ? undefined : (AGENT_BODIES[op.operationId] ?? {});
    const query = op.operationId === "agentLogChunk" ? "?sequence=1&offset=0&size=1" : "";
    const expect = { status: 404, message: onBuild ? "No build found" : "No job found" };
    for (const [note, authorization] of Object.entries(agentsHoldingNothing)) {
      cases.push({
        kind: "agent-job",
        operationId: op.operationId,
        method: op.method,
        path: path + query,
        body,
        authorization,
        expect,
        note,
      });
    }
  }
  return cases;
}
