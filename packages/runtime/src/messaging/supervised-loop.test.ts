import { type LoopSource, loopStats, superviseLoop } from "./supervised-loop.js";

/** A source fed by hand: push items, fail it, or end it; `closed` counts close() calls. */
function handSource<T>() {
  const queue: Array<{ item?: T; error?: unknown; end?: boolean }> = [];
  let wake: (() => void) | undefined;
  const state = { closed: 0 };
  const push = (entry: (typeof queue)[number]) => {
    queue.push(entry);
    wake?.();
  };
  const source: LoopSource<T> = {
    items: {
      async *[Symbol.asyncIterator]() {
        while (true) {
          const next = queue.shift();
          if (!next) {
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
            continue;
          }
          if (next.error) throw next.error;
          if (next.end) return;
          yield next.item as T;
        }
      },
    },
    close() {
      state.closed++;
      push({ end: true });
    },
  };
  return {
    source,
    state,
    item: (item: T) => push({ item }),
    fail: (error: unknown) => push({ error }),
    end: () => push({ end: true }),
  };
}

const logs = () => {
  const lines: Array<{ level: string; msg: string; obj: Record<string, unknown> }> = [];
  const at =
    (level: string) =>
    (obj: Record<string, unknown>, msg = "") =>
      void lines.push({ level, msg, obj });
  return { lines, logger: { warn: at("warn"), error: at("error"), fatal: at("fatal"), info: at("info") } };
};

const until = async (what: () => boolean) => {
  const deadline = Date.now() + 2000;
  while (!what()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 2));
  }
};

describe("superviseLoop", () => {
  it("goes on after an item whose handling throws, logging and counting it", async () => {
    const src = handSource<number>();
    const { lines, logger } = logs();
    const seen: number[] = [];
    const loop = superviseLoop({
      name: "t.items",
      logger,
      open: () => src.source,
      handle: (n) => {
        if (n === 2) throw new Error("bad item");
        seen.push(n);
      },
    });
    for (const n of [1, 2, 3]) src.item(n);
    await until(() => seen.length === 2);
    expect(seen).toEqual([1, 3]);
    expect(loop.stats).toMatchObject({ handled: 2, failed: 1, restarts: 0, lastError: "bad item" });
    expect(lines.filter((l) => l.level === "warn")).toHaveLength(1);
    expect(loopStats().find((s) => s.name === "t.items")).toMatchObject({ handled: 2, failed: 1 });
    await loop.stop();
    expect(loopStats().find((s) => s.name === "t.items")).toBeUndefined();
  });

  it("opens a source that failed or ended again after a backoff, telling onBreak each time", async () => {
    const sources = [handSource<string>(), handSource<string>(), handSource<string>()];
    let opened = 0;
    const breaks: string[] = [];
    const seen: string[] = [];
    const { lines, logger } = logs();
    const loop = superviseLoop({
      name: "t.breaks",
      logger,
      backoffMs: 1,
      open: () => (sources[opened++] as (typeof sources)[number]).source,
      handle: (s) => void seen.push(s),
      onBreak: (why) => breaks.push(why instanceof Error ? why.message : String(why)),
    });
    sources[0]?.item("a");
    sources[0]?.fail(new Error("connection lost"));
    await until(() => opened === 2);
    sources[1]?.item("b");
    sources[1]?.end();
    await until(() => opened === 3);
    sources[2]?.item("c");
    await until(() => seen.length === 3);
    expect(seen).toEqual(["a", "b", "c"]);
    expect(breaks).toEqual(["connection lost", "the source ended"]);
    expect(loop.stats.restarts).toBe(2);
    expect(lines.filter((l) => l.level === "error").map((l) => l.msg)).toEqual([
      "loop broke: opening its source again",
      "loop broke: opening its source again",
    ]);
    // A failed source is closed before it is replaced.
    expect(sources[0]?.state.closed).toBe(1);
    await loop.stop();
    expect(sources[2]?.state.closed).toBe(1);
    expect(loop.stats.running).toBe(false);
  });

  it("retries a source that cannot be opened", async () => {
    let attempts = 0;
    const src = handSource<number>();
    const seen: number[] = [];
    const loop = superviseLoop({
      name: "t.open",
      logger: logs().logger,
      backoffMs: 1,
      open: () => {
        attempts++;
        if (attempts < 3) throw new Error("no NATS");
        return src.source;
      },
      handle: (n) => void seen.push(n),
    });
    src.item(7);
    await until(() => seen.length === 1);
    expect(attempts).toBe(3);
    expect(loop.stats.restarts).toBe(2);
    await loop.stop();
  });

  it("exits deliberately on a break when asked to, after telling onBreak", async () => {
    const src = handSource<number>();
    const exits: number[] = [];
    const order: string[] = [];
    const { lines, logger } = logs();
    const loop = superviseLoop({
      name: "t.exit",
      logger,
      onFailure: "exit",
      exit: (code) => {
        order.push("exit");
        exits.push(code);
      },
      open: () => src.source,
      handle: () => undefined,
      onBreak: () => void order.push("onBreak"),
    });
    src.fail(new Error("iterator broke"));
    await until(() => exits.length === 1);
    expect(exits).toEqual([1]);
    expect(order).toEqual(["onBreak", "exit"]);
    expect(lines.find((l) => l.level === "fatal")?.msg).toBe("loop broke: exiting for the supervisor to restart");
    await loop.stop();
  });

  it("stops without counting a break, and stops while waiting to open again", async () => {
    const src = handSource<number>();
    const breaks: unknown[] = [];
    const loop = superviseLoop({
      name: "t.stop",
      logger: logs().logger,
      open: () => src.source,
      handle: () => undefined,
      onBreak: (why) => void breaks.push(why),
    });
    await loop.stop();
    expect([breaks, loop.stats.restarts, src.state.closed]).toEqual([[], 0, 1]);

    const waiting = superviseLoop({
      name: "t.stop-waiting",
      logger: logs().logger,
      backoffMs: 60_000,
      open: () => {
        throw new Error("down");
      },
      handle: () => undefined,
    });
    await until(() => waiting.stats.restarts === 1);
    const started = Date.now();
    await waiting.stop();
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
