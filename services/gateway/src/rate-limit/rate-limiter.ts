/**
 * Buildkite's REST rate limit (docs/compatibility.md#rate-limits) as pure state: requests per key (an organization, or a user for requests
 * that name none) per fixed window, shared between gateways by exchanging counts.
 *
 * Every gateway counts its own requests per key per window and tells the others its counts (absolute numbers, so a
 * lost or repeated message does no harm); its view of a key is its own count plus the latest count it heard from
 * each peer for the same window. A gateway announces its counts every tick (rate-limit-sharing.ts), and at once when
 * a key still under its limit has gathered `publishEvery` requests not yet announced. So at any moment a peer knows
 * all but fewer than `publishEvery` of this gateway's requests, plus those on the wire, and with N gateways the
 * requests admitted in one window are at most limit + (N − 1) × (publishEvery − 1) + the requests the peers admit
 * while one message is in flight (a NATS hop, well under a millisecond on one network).
 *
 * Why not @fastify/rate-limit with a NATS-backed store: no such store exists, and its store interface (`incr(key)`
 * answering `{current, ttl}`) would be this file and rate-limit-sharing.ts all the same, since counting per window
 * on the clock's minute and merging the peers' counts is the whole of the work. The plugin would replace only the
 * hook (rate-limit-hook.ts, some twenty lines) and would not send Buildkite's answer: its headers are
 * `x-ratelimit-*` (or the draft's `ratelimit-*` with `retry-after`), never `RateLimit-Scope` nor `RateLimit-Warning`,
 * and its 429 body is built without the request's count (`current`), which Buildkite's body carries.
 */

/** Buildkite's window: limits are per minute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

/** Buildkite's words when a limit is exceeded (the `RateLimit-Warning` header, and the start of the 429 message). */
export const RATE_LIMIT_EXCEEDED = "You have exceeded your API rate limit.";

/** The start (epoch ms) of the fixed window `now` falls in; every gateway derives the same windows from its clock. */
export function windowStart(nowMs: number, windowMs = RATE_LIMIT_WINDOW_MS): number {
  return Math.floor(nowMs / windowMs) * windowMs;
}

/** Whole seconds until the window `now` falls in ends: 1 to the window's length, never 0. */
export function secondsUntilReset(nowMs: number, windowMs = RATE_LIMIT_WINDOW_MS): number {
  return Math.max(1, Math.ceil((windowStart(nowMs, windowMs) + windowMs - nowMs) / 1000));
}

/**
 * How many of a gateway's requests to one key may go unannounced while the key is under its limit: 1 % of the
 * limit, at least 1 (every request announced at once for limits below 200).
 */
export function publishThreshold(limit: number): number {
  return Math.max(1, Math.floor(limit / 100));
}

/** The outcome of counting one request. */
export interface RateLimitDecision {
  readonly allowed: boolean;
  readonly limit: number;
  /** Requests counted for the key in this window, this one included, on every gateway as far as this one knows. */
  readonly current: number;
  readonly remaining: number;
  /** Seconds until the window resets. */
  readonly reset: number;
}

/** The `RateLimit-*` headers Buildkite sends for its organization (`rest`) limit. */
export function rateLimitHeaders(d: RateLimitDecision): Record<string, string> {
  const headers: Record<string, string> = {
    "RateLimit-Scope": "rest",
    "RateLimit-Limit": String(d.limit),
    "RateLimit-Remaining": String(d.remaining),
    "RateLimit-Reset": String(d.reset),
  };
  if (!d.allowed) headers["RateLimit-Warning"] = RATE_LIMIT_EXCEEDED;
  return headers;
}

/** Buildkite's 429 body. */
export function rateLimitBody(d: RateLimitDecision) {
  return {
    message: `${RATE_LIMIT_EXCEEDED} Please wait ${d.reset} seconds before making more requests.`,
    scope: "rest",
    limit: d.limit,
    current: d.current,
    reset: d.reset,
  };
}

/** A gateway's own counts for one window, as announced to its peers. */
export interface CountsMessage {
  gateway: string;
  window: number;
  counts: Record<string, number>;
}

/** Checks a message heard from a peer; anything malformed is refused rather than trusted. */
export function parseCountsMessage(value: unknown): CountsMessage | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { gateway, window, counts } = value as Partial<CountsMessage>;
  if (typeof gateway !== "string" || gateway === "" || !Number.isSafeInteger(window)) return undefined;
  if (typeof counts !== "object" || counts === null || Array.isArray(counts)) return undefined;
  for (const n of Object.values(counts)) if (!Number.isSafeInteger(n) || (n as number) < 0) return undefined;
  return { gateway, window: window as number, counts };
}

interface KeyState {
  window: number;
  own: number;
  /** Own requests counted since the key was last announced. */
  unannounced: number;
  /** The latest count heard from each peer, with the window it is for. */
  peers: Map<string, { window: number; count: number }>;
}

export interface RateLimiterOptions {
  /** Requests per key per window (positive). */
  limit: number;
  /** This gateway's id in the messages it sends; messages carrying it are its own and ignored. */
  gatewayId: string;
  windowMs?: number;
  now?: () => number;
  /** Requests to a key under its limit that may go unannounced; publishThreshold(limit) by default. */
  publishEvery?: number;
}

/** Creates the counting state of one gateway. */
export function createRateLimiter(opts: RateLimiterOptions) {
  const windowMs = opts.windowMs ?? RATE_LIMIT_WINDOW_MS;
  const now = opts.now ?? Date.now;
  const publishEvery = opts.publishEvery ?? publishThreshold(opts.limit);
  const keys = new Map<string, KeyState>();
  /** Keys whose own count changed since the last announcement. */
  const changed = new Set<string>();
  let onUrgent: (() => void) | undefined;

  const stateOf = (key: string, window: number): KeyState => {
    let s = keys.get(key);
    if (!s) {
      s = { window, own: 0, unannounced: 0, peers: new Map() };
      keys.set(key, s);
    } else if (s.window < window) {
      s.window = window;
      s.own = 0;
      s.unannounced = 0;
    }
    return s;
  };
  const peerTotal = (s: KeyState, window: number): number => {
    let total = 0;
    for (const p of s.peers.values()) if (p.window === window) total += p.count;
    return total;
  };
  const message = (window: number, entries: Iterable<string>): CountsMessage => {
    const counts: Record<string, number> = {};
    for (const key of entries) {
      const s = keys.get(key);
      if (s && s.window === window && s.own > 0) {
        counts[key] = s.own;
        s.unannounced = 0;
      }
    }
    return { gateway: opts.gatewayId, window, counts };
  };

  return {
    limit: opts.limit,
    gatewayId: opts.gatewayId,

    /** Counts one request against `key` and says whether it is within the limit. */
    hit(key: string): RateLimitDecision {
      const t = now();
      const window = windowStart(t, windowMs);
      const s = stateOf(key, window);
      const before = s.own + peerTotal(s, window);
      s.own += 1;
      s.unannounced += 1;
      changed.add(key);
      const current = before + 1;
      if (before < opts.limit && s.unannounced >= publishEvery) onUrgent?.();
      return {
        allowed: current <= opts.limit,
        limit: opts.limit,
        current,
        remaining: Math.max(0, opts.limit - current),
        reset: secondsUntilReset(t, windowMs),
      };
    },

    /** Where `key` stands in the current window, without counting a request (GET …/rate_limit). */
    peek(key: string): RateLimitDecision & { resetAt: number } {
      const t = now();
      const window = windowStart(t, windowMs);
      const s = keys.get(key);
      const current = s ? (s.window === window ? s.own : 0) + peerTotal(s, window) : 0;
      return {
        allowed: current <= opts.limit,
        limit: opts.limit,
        current,
        remaining: Math.max(0, opts.limit - current),
        reset: secondsUntilReset(t, windowMs),
        resetAt: window + windowMs,
      };
    },

    /** Takes in a peer's counts: the latest count per key and peer wins, for the window it names. */
    applyPeerCounts(msg: CountsMessage): void {
      if (msg.gateway === opts.gatewayId) return;
      const current = windowStart(now(), windowMs);
      // Counts of a past window no longer matter; those of the next one come from a peer whose clock runs ahead.
      if (msg.window < current || msg.window > current + windowMs) return;
      for (const [key, count] of Object.entries(msg.counts)) {
        const s = stateOf(key, current);
        const known = s.peers.get(msg.gateway);
        if (!known || known.window < msg.window || (known.window === msg.window && known.count < count)) {
          s.peers.set(msg.gateway, { window: msg.window, count });
        }
      }
    },

    /** Own counts of the current window for the keys that changed since the last call (undefined when none did). */
    takeChanges(): CountsMessage | undefined {
      if (changed.size === 0) return undefined;
      const msg = message(windowStart(now(), windowMs), changed);
      changed.clear();
      return Object.keys(msg.counts).length > 0 ? msg : undefined;
    },

    /** Every own count of the current window, for peers that missed a message or started since. */
    snapshot(): CountsMessage | undefined {
      changed.clear();
      const msg = message(windowStart(now(), windowMs), keys.keys());
      return Object.keys(msg.counts).length > 0 ? msg : undefined;
    },

    /** Forgets keys with nothing counted in the current or a later window. */
    prune(): void {
      const current = windowStart(now(), windowMs);
      for (const [key, s] of keys) {
        for (const [peer, p] of s.peers) if (p.window < current) s.peers.delete(peer);
        if (s.window < current && s.peers.size === 0) keys.delete(key);
      }
    },

    /** Calls `listener` whenever a key under its limit has `publishEvery` unannounced requests. */
    onUrgent(listener: () => void): void {
      onUrgent = listener;
    },

    /** How many keys are held (for tests and the pruning). */
    size(): number {
      return keys.size;
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
