import type { NatsHandle } from "@conveyor/runtime";

interface Subscription {
  subject: string;
  queue: Uint8Array[];
  /** What ends the iterator: nothing yet, an end, or an error it throws. */
  outcome?: { error?: unknown };
  wake?: () => void;
}

/**
 * NATS core pub/sub in memory (a fake for unit tests) of this service's subscriptions: every open subscription to a subject
 * gets every message published to it (its publisher's included, as NATS echoes), and a test can break the
 * subscriptions of a subject (their iterators throw, as when the connection fails) to see what the loop does.
 */
export function createFakeNats() {
  const subscriptions = new Set<Subscription>();
  const opened = new Map<string, number>();
  const subscribe = (subject: string) => {
    const sub: Subscription = { subject, queue: [] };
    subscriptions.add(sub);
    opened.set(subject, (opened.get(subject) ?? 0) + 1);
    return {
      unsubscribe() {
        sub.outcome ??= {};
        subscriptions.delete(sub);
        sub.wake?.();
      },
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const data = sub.queue.shift();
          if (data) {
            yield { subject, data };
            continue;
          }
          if (sub.outcome) {
            if (sub.outcome.error !== undefined) throw sub.outcome.error;
            return;
          }
          await new Promise<void>((resolve) => {
            sub.wake = resolve;
          });
        }
      },
    };
  };
  const publish = (subject: string, data?: string | Uint8Array) => {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : (data ?? new Uint8Array());
    for (const sub of subscriptions) {
      if (sub.subject !== subject) continue;
      sub.queue.push(bytes);
      sub.wake?.();
    }
  };
  return {
    /** The connection to hand to the code under test. */
    nc: { publish, subscribe } as unknown as NatsHandle["nc"],
    publish,
    /** Makes every open subscription to `subject` fail: its iterator throws. */
    fail(subject: string) {
      for (const sub of [...subscriptions]) {
        if (sub.subject !== subject) continue;
        subscriptions.delete(sub);
        sub.outcome = { error: new Error("connection lost") };
        sub.wake?.();
      }
    },
    /** How many subscriptions to `subject` were opened so far (those opened again after a break included). */
    opened: (subject: string) => opened.get(subject) ?? 0,
  };
}

/** Waits until `condition` holds, checking every 10 ms; fails after `timeoutMs`. */
export async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
