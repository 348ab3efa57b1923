import { Role } from "@conveyor/proto/identity";
import { agents, arrangeOrgUser, stack, unique } from "./support/stack-env.js";

// The metrics endpoints autoscalers poll (docs/compatibility.md#agent-endpoints), on the stack as
// buildkite-agent-metrics calls them: `GET /v3/metrics` and `GET /v3/metrics/queue?name=` with a cluster's
// registration token, which count that cluster's agents and jobs only and name the cluster, with the
// Buildkite-Agent-Metrics-Poll-Duration header.

jest.setTimeout(60_000);

// biome-ignore lint/suspicious/noExplicitAny: bodies are checked field by field below.
type Json = any;

const v3 = async (path: string, token: string, init: RequestInit = {}) => {
  const res = await fetch(`${stack.agentUrl}${path}`, {
    ...init,
    headers: { authorization: `Token ${token}`, "content-type": "application/json", ...init.headers },
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
};

/** A registered and connected agent (no real process: metrics count connected agents). */
async function connectedAgent(registrationToken: string, tags: string[]) {
  const registered = await v3("/register", registrationToken, {
    method: "POST",
    body: JSON.stringify({ name: unique("metrics"), hostname: "box", meta_data: tags }),
  });
  expect(registered.status).toBe(200);
  expect((await v3("/connect", registered.body.access_token, { method: "POST", body: "{}" })).status).toBe(200);
  return registered.body;
}

let slug: string;
let first: { name: string; token: string };
let second: { name: string; token: string };

beforeAll(async () => {
  const org = await arrangeOrgUser({ scopes: ["read_agents"], role: Role.ADMIN });
  slug = org.organization.slug;
  const cluster = async () => {
    const name = unique("Cluster");
    const { cluster: made } = await agents.createCluster({ organizationId: org.organization.id, name });
    const { secret } = await agents.createAgentToken({
      organizationId: org.organization.id,
      clusterId: made?.id ?? "",
    });
    return { name, token: secret };
  };
  first = await cluster();
  second = await cluster();
  await connectedAgent(first.token, ["queue=builders"]);
  await connectedAgent(first.token, ["queue=builders", "os=linux"]);
  await connectedAgent(second.token, ["queue=deployers"]);
});

describe("agent metrics for autoscalers", () => {
  it("answers one queue of the token's cluster, with the poll duration and the cluster's name", async () => {
    const res = await v3("/metrics/queue?name=builders", first.token);
    expect(res.status).toBe(200);
    expect(res.headers.get("buildkite-agent-metrics-poll-duration")).toBe("5");
    expect(res.body).toEqual({
      agents: { idle: 2, busy: 0, total: 2 },
      jobs: { scheduled: 0, running: 0, waiting: 0, total: 0 },
      organization: { slug },
      cluster: { name: first.name },
    });
  });

  it("counts only the token's cluster, in the whole metrics too", async () => {
    const other = await v3("/metrics/queue?name=builders", second.token);
    expect(other.body.agents).toEqual({ idle: 0, busy: 0, total: 0 });
    expect(other.body.cluster).toEqual({ name: second.name });
    const whole = await v3("/metrics", second.token);
    expect(whole.headers.get("buildkite-agent-metrics-poll-duration")).toBe("5");
    expect(whole.body.agents).toMatchObject({
      idle: 1,
      total: 1,
      queues: { deployers: { idle: 1, busy: 0, total: 1 } },
    });
    expect(Object.keys(whole.body.agents.queues)).toEqual(["deployers"]);
  });

  it("refuses a queue without a name and any credential but a registration token", async () => {
    expect((await v3("/metrics/queue", first.token)).status).toBe(400);
    const agent = await connectedAgent(first.token, ["queue=builders"]);
    expect((await v3("/metrics/queue?name=builders", agent.access_token)).status).toBe(401);
  });
});
