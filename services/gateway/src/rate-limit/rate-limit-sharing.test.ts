import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "@conveyor/runtime";
import { createFakeNats, waitFor } from "@conveyor/runtime/testing";
import { RATE_LIMIT_SUBJECT, shareRateLimitCounts } from "./rate-limit-sharing.js";
import { createRateLimiter } from "./rate-limiter.js";

const logger = { info: jest.fn(), warn: jest.fn(), error: jest.fn(), fatal: jest.fn() } as unknown as Logger;
/** A fixed clock, 18 s into a minute, so that no test straddles two windows. */
const T = Date.UTC(2026, 10, 22, 10, 0, 18);
const now = () => T;

describe("sharing rate-limit counts over NATS", () => {
  const stops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await Promise.all(stops.splice(0).map((stop) => stop()));
    jest.clearAllMocks();
  });

  it("tells the other gateway at once while a key is under its limit, so both keep to one limit", async () => {
    const { nc: bus, published } = createFakeNats();
    const a = createRateLimiter({ limit: 4, gatewayId: "a", now });
    const b = createRateLimiter({ limit: 4, gatewayId: "b", now });
    stops.push(shareRateLimitCounts(bus, a, logger, { intervalMs: 60_000 }));
    stops.push(shareRateLimitCounts(bus, b, logger, { intervalMs: 60_000 }));
    const admitted: boolean[] = [];
    for (const g of [a, b, a, b, a, b]) {
      admitted.push(g.hit("org:1").allowed);
      // What happens between two requests: the announcement (a microtask), then its delivery.
      await sleep(1);
    }
    expect(admitted).toEqual([true, true, true, true, false, false]);
    expect(published.every((m) => m.subject === RATE_LIMIT_SUBJECT)).toBe(true);
    expect(JSON.parse(published[0]?.string() ?? "{}")).toMatchObject({ gateway: "a", counts: { "org:1": 1 } });
  });

  it("announces counts every tick when they are not urgent", async () => {
    const nats = createFakeNats();
    const bus = nats.nc;
    const a = createRateLimiter({ limit: 1_000, gatewayId: "a", now, publishEvery: 100 });
    const b = createRateLimiter({ limit: 1_000, gatewayId: "b", now, publishEvery: 100 });
    stops.push(shareRateLimitCounts(bus, a, logger, { intervalMs: 20 }));
    stops.push(shareRateLimitCounts(bus, b, logger, { intervalMs: 20 }));
    for (let i = 0; i < 5; i++) a.hit("org:1");
    await sleep(100);
    expect(b.hit("org:1").current).toBe(6);
  });

  it("tells a gateway started later every count of the window with the next snapshot", async () => {
    const nats = createFakeNats();
    const bus = nats.nc;
    const a = createRateLimiter({ limit: 1_000, gatewayId: "a", now, publishEvery: 100 });
    stops.push(shareRateLimitCounts(bus, a, logger, { intervalMs: 10, snapshotEvery: 3 }));
    for (let i = 0; i < 7; i++) a.hit("org:1");
    await sleep(50);
    const late = createRateLimiter({ limit: 1_000, gatewayId: "late", now });
    stops.push(shareRateLimitCounts(bus, late, logger, { intervalMs: 10, snapshotEvery: 3 }));
    await sleep(80);
    expect(late.hit("org:1").current).toBe(8);
  });

  it("ignores malformed messages and says so", async () => {
    const nats = createFakeNats();
    const bus = nats.nc;
    const a = createRateLimiter({ limit: 10, gatewayId: "a", now });
    stops.push(shareRateLimitCounts(bus, a, logger, { intervalMs: 60_000 }));
    nats.publish(RATE_LIMIT_SUBJECT, "not json");
    nats.publish(RATE_LIMIT_SUBJECT, JSON.stringify({ gateway: "b", window: T - 18_000, counts: { "org:1": "9" } }));
    await sleep(5);
    expect(logger.warn).toHaveBeenCalledTimes(2);
    expect(a.hit("org:1").current).toBe(1);
  });

  it("goes on when its subscription breaks, keeping the peers' counts it heard", async () => {
    const nats = createFakeNats();
    const a = createRateLimiter({ limit: 1_000, gatewayId: "a", now });
    stops.push(shareRateLimitCounts(nats.nc, a, logger, { intervalMs: 60_000, reopenAfterMs: 10 }));
    const peer = (gateway: string, count: number) =>
      nats.publish(RATE_LIMIT_SUBJECT, JSON.stringify({ gateway, window: T - 18_000, counts: { "org:1": count } }));
    peer("b", 5);
    await sleep(5);
    nats.fail(RATE_LIMIT_SUBJECT);
    await waitFor(() => nats.opened(RATE_LIMIT_SUBJECT) === 2);
    expect(logger.error).toHaveBeenCalledWith(
      expect.objectContaining({ loop: "gateway.rate-limit-sharing" }),
      expect.any(String),
    );
    // Kept: b admitted 5 requests this window, whatever happened to the subscription since.
    expect(a.hit("org:1").current).toBe(6);
    // Heard again: the loop reads the reopened subscription.
    peer("c", 3);
    await sleep(5);
    expect(a.hit("org:1").current).toBe(10);
  });
});
