import { type Logger, superviseLoop } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import { type CountsMessage, parseCountsMessage, type RateLimiter } from "./rate-limiter.js";

/**
 * Where gateways exchange their rate-limit counts: plain NATS core pub/sub, outside `ci.>` so that JetStream's events
 * stream does not keep these short-lived messages.
 */
export const RATE_LIMIT_SUBJECT = "conveyor.gateway.rate_limit";

/** Keys per message, so that a snapshot of many organizations stays far below NATS's payload limit (1 MiB). */
const KEYS_PER_MESSAGE = 2_000;

export interface RateLimitSharingOptions {
  /** How often changed counts are announced; 250 ms by default. */
  intervalMs?: number;
  /** Every this many ticks, all counts of the window are announced (lost messages, gateways started since). */
  snapshotEvery?: number;
  /** The first pause before a broken subscription is made again (superviseLoop's default: 500 ms). */
  reopenAfterMs?: number;
}

/**
 * Shares a gateway's rate-limit counts with the other gateways over NATS and takes in theirs: changed counts every
 * tick, every count every few ticks, and at once when the limiter says a key near its limit has gone unannounced
 * too long (see rate-limiter.ts for the overshoot this bounds). The peers' messages are read by a supervised loop: a
 * malformed one is logged, counted and skipped, and a subscription that breaks is logged and made again. The peers'
 * counts heard before a break are kept, not dropped: a count is what a peer admitted in the current window, which only
 * grows until the window ends (when it is ignored anyway), so an old one is too low at worst; dropping them would let
 * this gateway admit the whole limit again on its own. Returns a stop function for shutdown.
 */
export function shareRateLimitCounts(
  nc: Pick<NatsConnection, "publish" | "subscribe">,
  limiter: RateLimiter,
  logger: Logger,
  opts: RateLimitSharingOptions = {},
): () => Promise<void> {
  const publish = (msg: CountsMessage | undefined) => {
    if (!msg) return;
    const entries = Object.entries(msg.counts);
    for (let i = 0; i < entries.length; i += KEYS_PER_MESSAGE) {
      const counts = Object.fromEntries(entries.slice(i, i + KEYS_PER_MESSAGE));
      try {
        nc.publish(RATE_LIMIT_SUBJECT, JSON.stringify({ ...msg, counts }));
      } catch (err) {
        // A closed connection only costs accuracy: peers fall back on what they heard last.
        logger.warn({ err }, "could not share rate-limit counts");
      }
    }
  };

  const peers = superviseLoop({
    name: "gateway.rate-limit-sharing",
    logger,
    ...(opts.reopenAfterMs === undefined ? {} : { backoffMs: opts.reopenAfterMs }),
    open() {
      const sub = nc.subscribe(RATE_LIMIT_SUBJECT);
      return { items: sub, close: () => sub.unsubscribe() };
    },
    handle(m) {
      const msg = parseCountsMessage(JSON.parse(m.string()));
      if (!msg) throw new Error("malformed rate-limit counts");
      limiter.applyPeerCounts(msg);
    },
  });

  let urgentQueued = false;
  limiter.onUrgent(() => {
    if (urgentQueued) return;
    urgentQueued = true;
    // Still before the next request is handled, but once for all the keys counted in this turn.
    queueMicrotask(() => {
      urgentQueued = false;
      publish(limiter.takeChanges());
    });
  });

  const snapshotEvery = opts.snapshotEvery ?? 8;
  let tick = 0;
  const timer = setInterval(() => {
    tick += 1;
    if (tick % snapshotEvery === 0) {
      limiter.prune();
      publish(limiter.snapshot());
    } else {
      publish(limiter.takeChanges());
    }
  }, opts.intervalMs ?? 250);
  timer.unref();

  return async () => {
    clearInterval(timer);
    limiter.onUrgent(() => {});
    await peers.stop();
  };
}
