// Two gateways share one REST rate limit through the stack's real NATS. Both run in this process over the stack's
// backend services (the stack's own gateway has a limit far above what the suites send), each with its own counts
// and its own NATS connection, as two gateway replicas would.
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { createLogger } from "@conveyor/runtime";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { buildApp } from "../services/gateway/src/app/build-app.js";
import { createGatewayClients } from "../services/gateway/src/clients/gateway-clients.js";
import { readGatewayConfig } from "../services/gateway/src/config.js";
import { shareRateLimitCounts } from "../services/gateway/src/rate-limit/rate-limit-sharing.js";
import { createRateLimiter, secondsUntilReset } from "../services/gateway/src/rate-limit/rate-limiter.js";
import { api, arrangeOrgUser, stack } from "./support/stack-env.js";

const LIMIT = 6;

interface Gateway {
  url: string;
  stop: () => Promise<void>;
}

async function startGateway(): Promise<Gateway> {
  const config = readGatewayConfig({ ...process.env, PORT: "0", LOG_LEVEL: "silent" });
  const rateLimiter = createRateLimiter({ limit: LIMIT, gatewayId: randomUUID() });
  const { app } = await buildApp({ config, clients: createGatewayClients(config), rateLimiter });
  const nc: NatsConnection = await connect({ servers: config.natsUrl, name: "rate-limit-test" });
  const stopSharing = shareRateLimitCounts(nc, rateLimiter, createLogger("gateway", "silent"));
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      stopSharing();
      await app.close();
      await nc.drain();
    },
  };
}

let gateways: Gateway[] = [];

beforeAll(async () => {
  gateways = [await startGateway(), await startGateway()];
});

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.stop()));
});

async function get(gateway: Gateway, path: string, token: string) {
  const res = await fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** Waits for a fresh minute when the current one is nearly over, so that one test's requests fall in one window. */
async function awayFromTheWindowEnd(): Promise<void> {
  const left = secondsUntilReset(Date.now());
  if (left < 10) await sleep(left * 1000 + 100);
}

describe("the REST rate limit across two gateways", () => {
  it("admits the organization's limit once in all, whichever gateway the requests go to", async () => {
    const { organization, secret } = await arrangeOrgUser({ scopes: ["read_organizations"] });
    const path = `/v2/organizations/${organization.slug}`;
    await awayFromTheWindowEnd();
    const statuses: number[] = [];
    const remaining: Array<string | null> = [];
    for (let i = 0; i < 2 * LIMIT; i++) {
      const res = await get(gateways[i % 2] as Gateway, path, secret);
      statuses.push(res.status);
      remaining.push(res.headers.get("ratelimit-remaining"));
      // Time for the count to cross NATS, as between requests a client spreads over replicas.
      await sleep(25);
    }
    expect(statuses).toEqual([...Array(LIMIT).fill(200), ...Array(LIMIT).fill(429)]);
    expect(remaining).toEqual(["5", "4", "3", "2", "1", "0", "0", "0", "0", "0", "0", "0"]);

    // Requests over the limit are announced with the next tick (250 ms) rather than at once.
    await sleep(300);
    const refused = await get(gateways[1] as Gateway, path, secret);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      message: expect.stringMatching(/^You have exceeded your API rate limit\. Please wait \d+ seconds/),
      scope: "rest",
      limit: LIMIT,
      current: 2 * LIMIT + 1,
      reset: Number(refused.headers.get("ratelimit-reset")),
    });
    expect(refused.headers.get("ratelimit-warning")).toBe("You have exceeded your API rate limit.");
  });

  it("keeps other organizations' budgets apart, on both gateways", async () => {
    const first = await arrangeOrgUser({ scopes: ["read_organizations"] });
    const second = await arrangeOrgUser({ scopes: ["read_organizations"] });
    await awayFromTheWindowEnd();
    const firstStatuses: number[] = [];
    for (let i = 0; i < LIMIT + 1; i++) {
      const res = await get(gateways[i % 2] as Gateway, `/v2/organizations/${first.organization.slug}`, first.secret);
      firstStatuses.push(res.status);
      await sleep(25);
    }
    // The first organization did use up its budget: the second's below is then kept apart from it.
    expect(firstStatuses).toEqual([...Array(LIMIT).fill(200), 429]);
    for (const gateway of gateways) {
      const res = await get(gateway, `/v2/organizations/${second.organization.slug}`, second.secret);
      expect(res.status).toBe(200);
      await sleep(25);
    }
    const again = await get(gateways[0] as Gateway, `/v2/organizations/${second.organization.slug}`, second.secret);
    expect(again.headers.get("ratelimit-remaining")).toBe(String(LIMIT - 3));
  });

  it("the stack's own gateway sends the headers with the test stack's high limit", async () => {
    const res = await api(`/v2/organizations/${stack.orgSlug}`, stack.apiToken);
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit-limit")).toBe(process.env.RATE_LIMIT_PER_MINUTE ?? "100000");
    expect(Number(res.headers.get("ratelimit-reset"))).toBeGreaterThanOrEqual(1);
  });
});
