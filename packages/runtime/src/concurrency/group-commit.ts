/**
 * Group commit: items handed in while a send is under way go together in the next send. With nothing under way an
 * item goes at once, so a lone caller waits for nothing; under load, a burst of callers costs one send per round
 * trip instead of one each. Each caller's promise settles with the send that carried its item: by default it
 * resolves when the send succeeds and rejects with the send's error, and `settle` can decide per caller instead.
 */

/** A caller's item, waiting for the send that carries it. */
export interface Waiting<I> {
  item: I;
  resolve(): void;
  reject(err: unknown): void;
}

export interface GroupCommitOptions<I> {
  /** Sends one batch of items, in the order they were handed in. */
  send(items: I[]): Promise<unknown>;
  /** Settles a batch's callers after its send: `err` is the send's error, undefined when it succeeded. */
  settle?(batch: readonly Waiting<I>[], err: unknown): void;
  /** The largest batch (in `sizeOf` units; an item is never split; default 500). */
  maxSize?: number;
  /** An item's size (default 1). */
  sizeOf?(item: I): number;
  /**
   * Sends under way at once at most (default 1). Below it an item goes at once, alone or with what waits; at it,
   * items wait for the first send to end. More than one keeps a slow send from holding every other item back.
   */
  concurrency?: number;
  /**
   * A send under way longer than this (ms) gives up its slot: the items waiting go without waiting for it, and it
   * settles its own callers when it ends. Bounds what a slow send (a slow tenant's read) costs the items behind it.
   * Default: a send keeps its slot until it ends.
   */
  slotMs?: number;
  /**
   * At most one send starts per this many ms, unless a full batch waits (default 0: no such pause): an item handed in
   * within lingerMs of the last send's start waits until lingerMs after it, with the items handed in meanwhile; one
   * handed in later goes at once. For items nobody waits on closely (agents' heartbeats, answered within seconds either
   * way), a few hundred ms make one send of what would be dozens under load, and cost a lone item nothing.
   */
  lingerMs?: number;
}

/** Every caller gets the send's outcome. */
const settleAll = <I>(batch: readonly Waiting<I>[], err: unknown) => {
  for (const w of batch) {
    if (err === undefined) w.resolve();
    else w.reject(err);
  }
};

/** Creates a group commit over `opts.send` (see the module doc above). */
export function createGroupCommit<I>(opts: GroupCommitOptions<I>) {
  const maxSize = Math.max(1, opts.maxSize ?? 500);
  const sizeOf = opts.sizeOf ?? (() => 1);
  const settle = opts.settle ?? settleAll;
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const lingerMs = Math.max(0, opts.lingerMs ?? 0);
  let waiting: Waiting<I>[] = [];
  let underWay = 0;
  /** The linger under way: the next send waits for it, unless a full batch waits. */
  let lingering: ReturnType<typeof setTimeout> | undefined;
  /** When (Date.now()) the last send started. */
  let lastSendAt = Number.NEGATIVE_INFINITY;

  /** The size of the items waiting (a full batch does not linger). */
  let waitingSize = 0;

  const takeBatch = (): Waiting<I>[] => {
    let size = 0;
    let taken = 0;
    while (taken < waiting.length) {
      const next = sizeOf((waiting[taken] as Waiting<I>).item);
      if (taken > 0 && size + next > maxSize) break;
      size += next;
      taken++;
    }
    const batch = waiting.slice(0, taken);
    waiting = waiting.slice(taken);
    waitingSize -= size;
    return batch;
  };

  const pump = () => {
    if (underWay >= concurrency || waiting.length === 0) return;
    const wait = lastSendAt + lingerMs - Date.now();
    if (wait > 0 && waitingSize < maxSize) {
      lingering ??= setTimeout(() => {
        lingering = undefined;
        send();
      }, wait);
      return;
    }
    clearTimeout(lingering);
    lingering = undefined;
    send();
  };

  const send = () => {
    if (underWay >= concurrency || waiting.length === 0) return;
    const batch = takeBatch();
    lastSendAt = Date.now();
    underWay++;
    let holding = true;
    const giveUpSlot = () => {
      if (!holding) return;
      holding = false;
      underWay--;
      pump();
    };
    const slotTimer = opts.slotMs === undefined ? undefined : setTimeout(giveUpSlot, opts.slotMs);
    slotTimer?.unref();
    let sent: Promise<unknown>;
    try {
      sent = opts.send(batch.map((w) => w.item));
    } catch (err) {
      sent = Promise.reject(err);
    }
    sent
      .then(
        () => settle(batch, undefined),
        (err: unknown) => settle(batch, err ?? new Error("the send failed")),
      )
      .finally(() => {
        clearTimeout(slotTimer);
        giveUpSlot();
      });
  };

  return {
    /** Hands in an item; settles with the send that carries it. */
    add(item: I): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        waitingSize += sizeOf(item);
        pump();
      });
    },
  };
}

export type GroupCommit<I> = ReturnType<typeof createGroupCommit<I>>;
