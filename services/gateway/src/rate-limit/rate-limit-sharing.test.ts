import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import { RATE_LIMIT_SUBJECT, shareRateLimitCounts } from "./rate-limit-sharing.js";
import { createRateLimiter } from "./rate-limiter.js";

type Bus = Pick<NatsConnection, "publish" | "subscribe">;

/** NATS core pub/sub in memory: every subscriber of a subject gets every message published to it, echo included. */
function createBus() {
  const subscribers = new Set<(data: string, subject: string) => void>();
  const published: Array<{ subject: string; data: string }> = [];
  const bus = {
    publish(subject: string, data?: string | Uint8Array) {
      const text = typeof data === "string" ? data : new TextDecoder().decode(data);
      published.push({ subject, data: text });
      for (const s of subscribers) s(text, subject);
    },
    subscribe(subject: string) {
      const queue: Array<{ subject: string; string(): string }> = [];
      let wake: (() => void) | undefined;
      let done = false;
      const deliver = (data: string, to: string) => {
        if (to !== subject) return;
        queue.push({ subject: to, string: () => data });
        wake?.();
      };
      subscribers.add(deliver);
      return {
        unsubscribe() {
          done = true;
          subscribers.delete(deliver);
          wake?.();
        },
        async *[Symbol.asyncIterator]() {
          while (!done) {
            const next = queue.shift();
            if (next) yield next;
            else await new Promise<void>((resolve) => (wake = resolve));
          }
        },
      };
    },
  };
  return { bus: bus as unknown as Bus, published };
}

const logger = { warn: jest.fn() } as unknown as Logger;
/** A fixed clock, 18 s into a minute, so that no test straddles two windows. */
const T = Date.UTC(2026, 10, 22, 10, 0, 18);
const now = () => T;

describe("sharing rate-limit counts over NATS", () => {
  const stops: Array<() => void> = [];
  afterEach(() => {
    for (const stop of stops.splice(0)) stop();
  });

  it("tells the other gateway at once while a key is under its limit, so both keep to one limit", async () => {
    const { bus, published } = createBus();
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
    expect(JSON.parse(published[0]?.data ?? "{}")).toMatchObject({ gateway: "a", counts: { "org:1": 1 } });
  });

  it("announces counts every tick when they are not urgent", async () => {
    const { bus } = createBus();
    const a = createRateLimiter({ limit: 1_000, gatewayId: "a", now, publishEvery: 100 });
    const b = createRateLimiter({ limit: 1_000, gatewayId: "b", now, publishEvery: 100 });
    stops.push(shareRateLimitCounts(bus, a, logger, { intervalMs: 20 }));
    stops.push(shareRateLimitCounts(bus, b, logger, { intervalMs: 20 }));
    for (let i = 0; i < 5; i++) a.hit("org:1");
    await sleep(100);
    expect(b.hit("org:1").current).toBe(6);
  });

  it("tells a gateway started later every count of the window with the next snapshot", async () => {
    const { bus } = createBus();
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
    const { bus } = createBus();
    const a = createRateLimiter({ limit: 10, gatewayId: "a", now });
    stops.push(shareRateLimitCounts(bus, a, logger, { intervalMs: 60_000 }));
    bus.publish(RATE_LIMIT_SUBJECT, "not json");
    bus.publish(RATE_LIMIT_SUBJECT, JSON.stringify({ gateway: "b", window: T - 18_000, counts: { "org:1": "9" } }));
    await sleep(5);
    expect(logger.warn).toHaveBeenCalledTimes(2);
    expect(a.hit("org:1").current).toBe(1);
  });
});
