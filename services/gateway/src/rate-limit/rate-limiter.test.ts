import {
  createRateLimiter,
  parseCountsMessage,
  publishThreshold,
  RATE_LIMIT_EXCEEDED,
  type RateLimitDecision,
  type RateLimiter,
  rateLimitBody,
  rateLimitHeaders,
  secondsUntilReset,
  windowStart,
} from "./rate-limiter.js";

const MINUTE = 60_000;
/** 2026-11-22T10:00:00.000Z, the start of a window. */
const T0 = Date.UTC(2026, 10, 22, 10, 0, 0);

function clock(start = T0) {
  let t = start;
  return {
    now: () => t,
    set(ms: number) {
      t = ms;
    },
    advance(ms: number) {
      t += ms;
    },
  };
}

function limiter(limit: number, gatewayId = "a", now = clock().now, publishEvery?: number): RateLimiter {
  return createRateLimiter({ limit, gatewayId, now, ...(publishEvery === undefined ? {} : { publishEvery }) });
}

describe("window arithmetic", () => {
  it("puts every instant of a minute in the window that starts on the minute", () => {
    expect(windowStart(T0)).toBe(T0);
    expect(windowStart(T0 + 1)).toBe(T0);
    expect(windowStart(T0 + MINUTE - 1)).toBe(T0);
    expect(windowStart(T0 + MINUTE)).toBe(T0 + MINUTE);
    expect(windowStart(T0 + 2 * MINUTE + 30_000)).toBe(T0 + 2 * MINUTE);
  });

  it("honours another window length", () => {
    expect(windowStart(T0 + 12_345, 10_000)).toBe(T0 + 10_000);
  });

  it("counts the seconds until the window resets, rounded up, from 60 down to 1 and never 0", () => {
    expect(secondsUntilReset(T0)).toBe(60);
    expect(secondsUntilReset(T0 + 1)).toBe(60);
    expect(secondsUntilReset(T0 + 999)).toBe(60);
    expect(secondsUntilReset(T0 + 1_000)).toBe(59);
    expect(secondsUntilReset(T0 + 18_000)).toBe(42);
    expect(secondsUntilReset(T0 + MINUTE - 1)).toBe(1);
    expect(secondsUntilReset(T0 + MINUTE)).toBe(60);
  });

  it("announces at once below a limit of 200, and every 1 % of the limit above", () => {
    expect(publishThreshold(1)).toBe(1);
    expect(publishThreshold(199)).toBe(1);
    expect(publishThreshold(200)).toBe(2);
    expect(publishThreshold(1_000)).toBe(10);
    expect(publishThreshold(100_000)).toBe(1_000);
  });
});

describe("headers and the 429 body", () => {
  const ok: RateLimitDecision = { allowed: true, limit: 200, current: 3, remaining: 197, reset: 42 };
  const over: RateLimitDecision = { allowed: false, limit: 200, current: 201, remaining: 0, reset: 42 };

  it("sends Buildkite's organization headers, without a warning while within the limit", () => {
    expect(rateLimitHeaders(ok)).toEqual({
      "RateLimit-Scope": "rest",
      "RateLimit-Limit": "200",
      "RateLimit-Remaining": "197",
      "RateLimit-Reset": "42",
    });
  });

  it("adds Buildkite's warning once the limit is exceeded", () => {
    expect(rateLimitHeaders(over)).toEqual({
      "RateLimit-Scope": "rest",
      "RateLimit-Limit": "200",
      "RateLimit-Remaining": "0",
      "RateLimit-Reset": "42",
      "RateLimit-Warning": "You have exceeded your API rate limit.",
    });
  });

  it("says in the body how long to wait, with the scope, limit, count and reset", () => {
    expect(rateLimitBody(over)).toEqual({
      message: "You have exceeded your API rate limit. Please wait 42 seconds before making more requests.",
      scope: "rest",
      limit: 200,
      current: 201,
      reset: 42,
    });
    expect(rateLimitBody(over).message.startsWith(RATE_LIMIT_EXCEEDED)).toBe(true);
  });
});

describe("counting on one gateway", () => {
  it("allows the limit and refuses the request after it, with the remaining count going down to 0", () => {
    const c = clock(T0 + 18_000);
    const rl = limiter(3, "a", c.now);
    expect(rl.hit("org:1")).toEqual({ allowed: true, limit: 3, current: 1, remaining: 2, reset: 42 });
    expect(rl.hit("org:1")).toMatchObject({ allowed: true, current: 2, remaining: 1 });
    expect(rl.hit("org:1")).toMatchObject({ allowed: true, current: 3, remaining: 0 });
    expect(rl.hit("org:1")).toMatchObject({ allowed: false, current: 4, remaining: 0, reset: 42 });
    expect(rl.hit("org:1")).toMatchObject({ allowed: false, current: 5, remaining: 0 });
  });

  it("peeks at a key's window without counting, its peers' counts included, and at nothing for an unknown key", () => {
    const c = clock(T0 + 20_000);
    const rl = limiter(10, "a", c.now);
    expect(rl.peek("org:1")).toEqual({
      allowed: true,
      limit: 10,
      current: 0,
      remaining: 10,
      reset: 40,
      resetAt: T0 + MINUTE,
    });
    rl.hit("org:1");
    rl.hit("org:1");
    rl.applyPeerCounts({ gateway: "b", window: T0, counts: { "org:1": 3 } });
    expect(rl.peek("org:1")).toMatchObject({ current: 5, remaining: 5 });
    expect(rl.peek("org:1")).toMatchObject({ current: 5 });
    expect(rl.hit("org:1")).toMatchObject({ current: 6 });
    c.advance(MINUTE);
    expect(rl.peek("org:1")).toMatchObject({ current: 0, resetAt: T0 + 2 * MINUTE });
  });

  it("counts each key apart", () => {
    const rl = limiter(1);
    expect(rl.hit("org:1").allowed).toBe(true);
    expect(rl.hit("org:1").allowed).toBe(false);
    expect(rl.hit("org:2").allowed).toBe(true);
    expect(rl.hit("user:1").allowed).toBe(true);
  });

  it("starts again at the next window, and the reset counts down within one", () => {
    const c = clock(T0 + 59_500);
    const rl = limiter(2, "a", c.now);
    rl.hit("k");
    rl.hit("k");
    expect(rl.hit("k")).toMatchObject({ allowed: false, reset: 1 });
    c.advance(500);
    expect(rl.hit("k")).toEqual({ allowed: true, limit: 2, current: 1, remaining: 1, reset: 60 });
    c.advance(30_000);
    expect(rl.hit("k")).toMatchObject({ allowed: true, current: 2, reset: 30 });
  });

  it("forgets keys of past windows when pruned, and keeps the current ones", () => {
    const c = clock();
    const rl = limiter(5, "a", c.now);
    rl.hit("old");
    c.advance(MINUTE);
    rl.hit("new");
    rl.prune();
    expect(rl.size()).toBe(1);
    expect(rl.hit("new").current).toBe(2);
  });
});

describe("sharing counts between gateways", () => {
  it("adds the latest count heard from each peer for the same window", () => {
    const c = clock();
    const rl = limiter(10, "a", c.now);
    rl.applyPeerCounts({ gateway: "b", window: T0, counts: { k: 4 } });
    rl.applyPeerCounts({ gateway: "c", window: T0, counts: { k: 3 } });
    expect(rl.hit("k")).toMatchObject({ current: 8, remaining: 2 });
    // A newer count from b replaces its older one rather than adding to it.
    rl.applyPeerCounts({ gateway: "b", window: T0, counts: { k: 6 } });
    expect(rl.hit("k")).toMatchObject({ current: 11, remaining: 0, allowed: false });
  });

  it("keeps the highest count of a window when messages arrive out of order or twice", () => {
    const rl = limiter(100);
    rl.applyPeerCounts({ gateway: "b", window: T0, counts: { k: 7 } });
    rl.applyPeerCounts({ gateway: "b", window: T0, counts: { k: 5 } });
    rl.applyPeerCounts({ gateway: "b", window: T0, counts: { k: 7 } });
    expect(rl.hit("k").current).toBe(8);
  });

  it("ignores its own messages, echoed back by NATS", () => {
    const rl = limiter(10, "a");
    rl.hit("k");
    rl.applyPeerCounts({ gateway: "a", window: T0, counts: { k: 1 } });
    expect(rl.hit("k").current).toBe(2);
  });

  it("ignores counts of a past window", () => {
    const c = clock(T0 + MINUTE + 5_000);
    const rl = limiter(10, "a", c.now);
    rl.applyPeerCounts({ gateway: "b", window: T0, counts: { k: 9 } });
    expect(rl.hit("k").current).toBe(1);
  });

  it("keeps counts of the next window from a peer whose clock runs ahead, and uses them once it begins", () => {
    const c = clock(T0 + MINUTE - 200);
    const rl = limiter(10, "a", c.now);
    rl.applyPeerCounts({ gateway: "b", window: T0, counts: { k: 2 } });
    rl.applyPeerCounts({ gateway: "b", window: T0 + MINUTE, counts: { k: 5 } });
    expect(rl.hit("k").current).toBe(1);
    c.advance(200);
    expect(rl.hit("k").current).toBe(6);
    // Two windows ahead is no clock skew worth trusting.
    rl.applyPeerCounts({ gateway: "c", window: T0 + 3 * MINUTE, counts: { k: 50 } });
    expect(rl.hit("k").current).toBe(7);
  });

  it("drops a peer's count when its window is over", () => {
    const c = clock();
    const rl = limiter(10, "a", c.now);
    rl.applyPeerCounts({ gateway: "b", window: T0, counts: { k: 9 } });
    c.advance(MINUTE);
    expect(rl.hit("k").current).toBe(1);
    rl.prune();
    c.advance(MINUTE);
    rl.prune();
    expect(rl.size()).toBe(0);
  });

  it("announces the own counts of keys that changed, once, and everything in a snapshot", () => {
    const rl = limiter(100, "a");
    expect(rl.takeChanges()).toBeUndefined();
    rl.hit("k");
    rl.hit("k");
    rl.hit("j");
    expect(rl.takeChanges()).toEqual({ gateway: "a", window: T0, counts: { k: 2, j: 1 } });
    expect(rl.takeChanges()).toBeUndefined();
    rl.hit("j");
    expect(rl.takeChanges()).toEqual({ gateway: "a", window: T0, counts: { j: 2 } });
    expect(rl.snapshot()).toEqual({ gateway: "a", window: T0, counts: { k: 2, j: 2 } });
  });

  it("announces no key whose own count belongs to a past window, and peers' counts never", () => {
    const c = clock();
    const rl = limiter(100, "a", c.now);
    rl.hit("k");
    rl.applyPeerCounts({ gateway: "b", window: T0, counts: { j: 3 } });
    c.advance(MINUTE);
    expect(rl.takeChanges()).toBeUndefined();
    expect(rl.snapshot()).toBeUndefined();
  });

  it("asks for an announcement at once every publishEvery requests while a key is under its limit", () => {
    const rl = limiter(10, "a", clock().now, 3);
    const urgent = jest.fn();
    rl.onUrgent(urgent);
    rl.hit("k");
    rl.hit("k");
    expect(urgent).not.toHaveBeenCalled();
    rl.hit("k");
    expect(urgent).toHaveBeenCalledTimes(1);
    rl.takeChanges();
    rl.hit("k");
    rl.hit("k");
    expect(urgent).toHaveBeenCalledTimes(1);
    rl.hit("k");
    expect(urgent).toHaveBeenCalledTimes(2);
  });

  it("stops asking once the key is over its limit: the periodic announcement is soon enough then", () => {
    const rl = limiter(2, "a", clock().now, 1);
    const urgent = jest.fn();
    rl.onUrgent(urgent);
    rl.hit("k");
    rl.hit("k");
    expect(urgent).toHaveBeenCalledTimes(2);
    rl.hit("k");
    rl.hit("k");
    expect(urgent).toHaveBeenCalledTimes(2);
  });

  it("keeps two gateways that announce every request within the limit together", () => {
    const a = limiter(5, "a", clock().now, 1);
    const b = limiter(5, "b", clock().now, 1);
    // Each announcement reaches the other gateway before its next request, as the microtask in sharing ensures.
    a.onUrgent(() => {
      const m = a.takeChanges();
      if (m) b.applyPeerCounts(m);
    });
    b.onUrgent(() => {
      const m = b.takeChanges();
      if (m) a.applyPeerCounts(m);
    });
    const allowed = [a, b, a, b, a, b, a, b].map((g) => g.hit("org").allowed);
    expect(allowed).toEqual([true, true, true, true, true, false, false, false]);
  });

  it("overshoots by at most (N − 1) × (publishEvery − 1) when announcements come only at the threshold", () => {
    const limit = 20;
    const publishEvery = 4;
    const gateways = ["a", "b", "c"].map((id) => limiter(limit, id, clock().now, publishEvery));
    for (const g of gateways) {
      g.onUrgent(() => {
        const m = g.takeChanges();
        if (m) for (const other of gateways) other.applyPeerCounts(m);
      });
    }
    let admitted = 0;
    for (let i = 0; i < 300; i++) if (gateways[i % 3]?.hit("org").allowed) admitted += 1;
    expect(admitted).toBeGreaterThanOrEqual(limit);
    expect(admitted).toBeLessThanOrEqual(limit + (gateways.length - 1) * (publishEvery - 1));
  });
});

describe("messages heard from peers", () => {
  it("accepts a well-formed message", () => {
    expect(parseCountsMessage({ gateway: "b", window: T0, counts: { "org:1": 3 } })).toEqual({
      gateway: "b",
      window: T0,
      counts: { "org:1": 3 },
    });
  });

  it.each([
    ["not an object", "hello"],
    ["null", null],
    ["no gateway", { window: T0, counts: {} }],
    ["an empty gateway", { gateway: "", window: T0, counts: {} }],
    ["a fractional window", { gateway: "b", window: 1.5, counts: {} }],
    ["counts as an array", { gateway: "b", window: T0, counts: [1] }],
    ["a negative count", { gateway: "b", window: T0, counts: { k: -1 } }],
    ["a string count", { gateway: "b", window: T0, counts: { k: "3" } }],
  ])("refuses %s", (_name, value) => {
    expect(parseCountsMessage(value)).toBeUndefined();
  });
});
