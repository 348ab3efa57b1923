import { randomUUID } from "node:crypto";
import type { Logger } from "@conveyor/runtime";
import { type AttemptOutcome, nextStep, type RetryPolicy } from "../domain/retry-policy.js";
import type { AttemptResult, DeliveryDoc, DeliveryRepository } from "../store/delivery-repository.js";
import type { Channel } from "./channel.js";

export interface DispatcherConfig {
  retry: RetryPolicy;
  /** How long a claim lasts: longer than one attempt can take (the channels' total timeout). */
  leaseMs: number;
  /** Deliveries in flight in this process, at most. */
  maxInFlight: number;
  /** … of one organization. */
  perOrganization: number;
  /** … to one host. */
  perHost: number;
  /** How many due deliveries one look reads. */
  batch: number;
}

export interface DispatcherDeps {
  deliveries: DeliveryRepository;
  channels: readonly Channel[];
  config: DispatcherConfig;
  now: () => Date;
  logger: Pick<Logger, "warn" | "info" | "debug">;
  random?: () => number;
}

/** Counts in flight per key, with a bound. */
function counter() {
  const counts = new Map<string, number>();
  return {
    get: (k: string) => counts.get(k) ?? 0,
    add(k: string, n: number) {
      const v = (counts.get(k) ?? 0) + n;
      if (v <= 0) counts.delete(k);
      else counts.set(k, v);
    },
  };
}

/**
 * Sends due deliveries (docs/notifications.md#delivery). Each look reads the most overdue pending deliveries nobody
 * holds and claims each one it has room for by a compare-and-set (a lease with this process's name), so replicas
 * never send the same delivery at the same time; a process that dies mid-send lets its claim lapse and another sends
 * it again, with the same delivery id. Within a process, at most `maxInFlight` deliveries go at once, `perOrganization`
 * of one organization and `perHost` to one host: a slow target holds up only its own. An ordered delivery waits while
 * an earlier one of its build and target is pending. Every attempt is recorded; failures are tried again with
 * exponential backoff until the delivery's give-up time.
 */
export function createDispatcher(deps: DispatcherDeps) {
  const { deliveries, config } = deps;
  const owner = randomUUID();
  const random = deps.random ?? Math.random;
  const byKind = new Map(deps.channels.map((c) => [c.kind, c]));
  const orgs = counter();
  const hosts = counter();
  const running = new Set<Promise<void>>();
  const aborter = new AbortController();

  const attempt = async (d: DeliveryDoc): Promise<void> => {
    const channel = byKind.get(d.kind);
    const started = deps.now();
    const t0 = performance.now();
    let outcome: AttemptOutcome;
    if (!channel) {
      outcome = { ok: false, responseCode: 0, error: `no channel sends "${d.kind}" deliveries`, retryable: false };
    } else {
      try {
        outcome = await channel.send(d, aborter.signal);
      } catch (err) {
        outcome = { ok: false, responseCode: 0, error: (err as Error).message || String(err), retryable: true };
      }
    }
    const durationMs = Math.round(performance.now() - t0);
    const now = deps.now();
    const step = nextStep(config.retry, outcome, d.attempts + 1, d.giveUpAt, now, random());
    const result: AttemptResult =
      step.status === "pending" ? { status: "pending", at: now, nextAttemptAt: step.nextAt } : { ...step, at: now };
    const kept = await deliveries.record(
      d._id,
      owner,
      { at: started, responseCode: outcome.responseCode, error: outcome.error.slice(0, 500), durationMs },
      result,
    );
    if (!kept) deps.logger.warn({ delivery: d._id }, "delivery's claim lapsed during its attempt; its result not kept");
    if (step.status === "failed") {
      deps.logger.warn({ delivery: d._id, kind: d.kind, event: d.event, error: outcome.error }, "delivery given up");
    }
  };

  const launch = (d: DeliveryDoc) => {
    orgs.add(d.organizationId, 1);
    hosts.add(d.host, 1);
    const p = attempt(d)
      .catch((err: unknown) => deps.logger.warn({ err, delivery: d._id }, "delivery attempt not recorded"))
      .finally(() => {
        orgs.add(d.organizationId, -1);
        hosts.add(d.host, -1);
        running.delete(p);
      });
    running.add(p);
  };

  const hasRoom = (d: DeliveryDoc) =>
    running.size < config.maxInFlight &&
    orgs.get(d.organizationId) < config.perOrganization &&
    (d.host === "" || hosts.get(d.host) < config.perHost);

  return {
    owner,
    /** One look: claims and starts what is due and has room; returns how many it started. */
    async dispatchDue(): Promise<number> {
      if (running.size >= config.maxInFlight) return 0;
      const now = deps.now();
      const due = await deliveries.due(now, config.batch);
      let started = 0;
      const orderKeys = new Set<string>();
      for (const d of due) {
        if (running.size >= config.maxInFlight) break;
        if (!hasRoom(d)) continue;
        if (d.orderKey) {
          // One of a build's deliveries to a target at a time, the earliest first.
          if (orderKeys.has(d.orderKey) || (await deliveries.hasEarlierPending(d.orderKey, d.seq))) continue;
          orderKeys.add(d.orderKey);
        }
        const claimed = await deliveries.claim(d._id, owner, now, new Date(now.getTime() + config.leaseMs));
        if (!claimed) continue;
        launch(claimed);
        started++;
      }
      return started;
    },
    /** Deliveries being sent by this process now. */
    inFlight: () => running.size,
    /** Waits for the attempts under way (for tests and shutdown). */
    async idle(): Promise<void> {
      while (running.size > 0) await Promise.all([...running]);
    },
    /** Aborts the attempts under way (shutdown: their claims lapse and another replica sends them). */
    abort: () => aborter.abort(),
  };
}
