import type { NatsConnection } from "@nats-io/transport-node";

/** A message as a subscription hands it over: its subject, its bytes and its text. */
export interface FakeMsg {
  subject: string;
  data: Uint8Array;
  string(): string;
}

interface Subscription {
  subject: string;
  queue: FakeMsg[];
  /** What ends the iterator: nothing yet, an end, or an error it throws. */
  outcome?: { error?: unknown };
  wake?: () => void;
}

/**
 * NATS core pub/sub in memory, for unit tests of code that subscribes (`@conveyor/runtime/testing`): every open
 * subscription to a subject gets every message published to it (its publisher's included, as NATS echoes), and a test
 * can break the subscriptions of a subject (their iterators throw, as when the connection fails) or end them, to see
 * what the loop over them does (supervised-loop.ts).
 */
export function createFakeNats() {
  const subscriptions = new Set<Subscription>();
  const published: FakeMsg[] = [];
  const opened = new Map<string, number>();
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();

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
      async *[Symbol.asyncIterator](): AsyncGenerator<FakeMsg> {
        for (;;) {
          const next = sub.queue.shift();
          if (next) {
            yield next;
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
    const bytes = typeof data === "string" ? encoder.encode(data) : (data ?? new Uint8Array());
    const msg: FakeMsg = { subject, data: bytes, string: () => decoder.decode(bytes) };
    published.push(msg);
    for (const sub of subscriptions) {
      if (sub.subject !== subject) continue;
      sub.queue.push(msg);
      sub.wake?.();
    }
  };

  /** Ends every open subscription to `subject`: with `error` thrown by its iterator, or as a plain end. */
  const close = (subject: string, error?: unknown) => {
    for (const sub of [...subscriptions]) {
      if (sub.subject !== subject) continue;
      subscriptions.delete(sub);
      sub.outcome = error === undefined ? {} : { error };
      sub.wake?.();
    }
  };

  return {
    /** The connection to hand to the code under test. */
    nc: { publish, subscribe } as unknown as NatsConnection,
    publish,
    published,
    /** Makes every open subscription to `subject` fail: its iterator throws `error`. */
    fail: (subject: string, error: unknown = new Error("connection lost")) => close(subject, error),
    /** Ends every open subscription to `subject`: its iterator returns. */
    end: (subject: string) => close(subject),
    /** How many subscriptions to `subject` were opened so far (those opened again after a break included). */
    opened: (subject: string) => opened.get(subject) ?? 0,
  };
}

export type FakeNats = ReturnType<typeof createFakeNats>;

/** Waits until `condition` holds, checking every 10 ms; fails after `timeoutMs`. */
export async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
