/**
 * Gates for tests of group commits (group-commit, insert-batcher): a fake command waits at a gate
 * until the test opens it, so that callers can arrive while one command is under way.
 */
export interface Gates {
  /** Resolves when the test opens this gate. */
  wait(): Promise<void>;
  /** Opens the oldest gate still closed, then lets the callbacks it triggers run. */
  openOldest(): Promise<void>;
  /** Opens every gate still closed, then lets the callbacks they trigger run. */
  openAll(): Promise<void>;
}

/** Creates a set of gates, all closed until the test opens them. */
export function createGates(): Gates {
  const closed: Array<() => void> = [];
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    wait: () => new Promise<void>((resolve) => closed.push(resolve)),
    async openOldest() {
      closed.shift()?.();
      await settle();
    },
    async openAll() {
      for (const open of closed.splice(0)) open();
      await settle();
    },
  };
}
