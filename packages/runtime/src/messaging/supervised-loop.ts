import type { Logger } from "pino";

/**
 * Long-lived loops over async sources (NATS subscriptions, JetStream consumers, connection status streams), watched
 * so that no failure is silent: an item whose handling throws is logged and counted and the loop goes on; a source
 * that fails or ends while nobody stopped it is logged, counted, reported to `onBreak` (drop what it kept current)
 * and opened again after a backoff, or the process exits deliberately (`onFailure: "exit"`) for its supervisor to
 * start it again. Without this, an iterator's error becomes an unhandled rejection and Node exits, or the loop
 * stops and whatever it kept current goes stale unnoticed.
 */

/** A source a loop reads: its items, and how to close it (unsubscribe, stop consuming). */
export interface LoopSource<T> {
  items: AsyncIterable<T>;
  close?(): void | Promise<void>;
}

/** What a loop has done, for `/stats` and tests. */
export interface LoopStats {
  name: string;
  /** Items handled without an error. */
  handled: number;
  /** Items whose handling threw. */
  failed: number;
  /** Times the source broke (failed or ended) and was opened again. */
  restarts: number;
  running: boolean;
  /** The last failure, of an item or of the source. */
  lastError?: string;
}

export interface SupervisedLoopOptions<T> {
  /** Names the loop in logs and stats, for example "gateway.identity-events". */
  name: string;
  logger: Pick<Logger, "warn" | "error" | "fatal" | "info">;
  /** Opens the source; called again after each break. */
  open(): LoopSource<T> | Promise<LoopSource<T>>;
  /** Handles one item. A throw is logged and counted; the loop goes on with the next item. */
  handle(item: T): void | Promise<void>;
  /** Called when the source broke (before it is opened again): drop state that depended on seeing every item. */
  onBreak?(why: unknown): void;
  /** "restart" (the default) opens the source again after a backoff; "exit" ends the process with status 1. */
  onFailure?: "restart" | "exit";
  /** The first pause before opening again (doubled on each break in a row, up to `maxBackoffMs`); default 500. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Ends the process on "exit" (tests hand in their own); default process.exit. */
  exit?(code: number): void;
}

export interface SupervisedLoop {
  readonly stats: Readonly<LoopStats>;
  /** Stops the loop: closes the source and resolves once the loop ended. */
  stop(): Promise<void>;
}

const loops = new Set<LoopStats>();

/** What every supervised loop of this process has done. */
export function loopStats(): LoopStats[] {
  return [...loops].map((s) => ({ ...s }));
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Starts a supervised loop (see the file's comment); it runs until `stop()`. */
export function superviseLoop<T>(opts: SupervisedLoopOptions<T>): SupervisedLoop {
  const stats: LoopStats = { name: opts.name, handled: 0, failed: 0, restarts: 0, running: true };
  loops.add(stats);
  const first = opts.backoffMs ?? 500;
  const max = opts.maxBackoffMs ?? 30_000;
  let stopped = false;
  let source: LoopSource<T> | undefined;
  let wake: (() => void) | undefined;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref?.();
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const run = async () => {
    let backoff = first;
    while (!stopped) {
      let why: unknown;
      try {
        source = await opts.open();
        if (stopped) break;
        for await (const item of source.items) {
          backoff = first;
          try {
            await opts.handle(item);
            stats.handled++;
          } catch (err) {
            stats.failed++;
            stats.lastError = message(err);
            opts.logger.warn({ err, loop: opts.name }, "loop item not handled; going on with the next");
          }
          if (stopped) break;
        }
        if (stopped) break;
        why = new Error("the source ended");
      } catch (err) {
        if (stopped) break;
        why = err;
      }
      await closeSource();
      stats.lastError = message(why);
      try {
        opts.onBreak?.(why);
      } catch (err) {
        opts.logger.warn({ err, loop: opts.name }, "loop's onBreak failed");
      }
      if (opts.onFailure === "exit") {
        opts.logger.fatal({ err: why, loop: opts.name }, "loop broke: exiting for the supervisor to restart");
        stats.running = false;
        (opts.exit ?? ((code: number) => process.exit(code)))(1);
        return;
      }
      stats.restarts++;
      opts.logger.error({ err: why, loop: opts.name, retryInMs: backoff }, "loop broke: opening its source again");
      await pause(backoff);
      backoff = Math.min(backoff * 2, max);
    }
  };

  const closeSource = async () => {
    const open = source;
    source = undefined;
    try {
      await open?.close?.();
    } catch (err) {
      opts.logger.warn({ err, loop: opts.name }, "loop's source did not close cleanly");
    }
  };

  const done = run().finally(async () => {
    await closeSource();
    stats.running = false;
    loops.delete(stats);
  });

  return {
    stats,
    async stop() {
      if (stopped) return done;
      stopped = true;
      wake?.();
      await closeSource();
      await done;
    },
  };
}
