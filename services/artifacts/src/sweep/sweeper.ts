import type { ArtifactsContext } from "../artifacts-context.js";
import { OBJECTLESS_STATES, transition } from "../domain/artifact-state.js";
import { expiryCutoff } from "../domain/retention.js";

/** What one sweep did. */
export interface SweepResult {
  abandoned: number;
  expired: number;
  removed: number;
}

/** How many rounds of `batch` records one sweep handles at most before it waits for the next tick. */
const MAX_ROUNDS = 20;

/**
 * The artifacts sweep, in bounded batches: uploads never reported finished become error, artifacts older than their
 * organization's retention become expired, and the objects of error, deleted and expired artifacts are removed from
 * the store. Each step is a conditional update or an idempotent removal, and a record stays flagged until its object
 * is gone, so a sweep interrupted anywhere (a crash, a store outage) is finished by a later one, and sweeps of
 * several processes at once do no harm.
 */
export function createSweeper(ctx: ArtifactsContext) {
  const { repo, store, config } = ctx;
  const batch = config.sweepBatch;

  /** Marks a round of abandoned uploads error; returns how many were found. */
  async function abandonRound(now: Date): Promise<number> {
    const t = transition("abandoned");
    const before = new Date(now.getTime() - config.abandonAfterS * 1000);
    const stale = await repo.findOld(t.from, before, { notIn: [] }, batch);
    await repo.transition(
      stale.map((d) => d._id),
      t.from,
      t.to,
      { endedAt: now, objectRemoved: false },
    );
    return stale.length;
  }

  /** Marks a round of artifacts past their retention expired; returns how many were found. */
  async function expireRound(now: Date): Promise<number> {
    const t = transition("expired");
    const custom = await repo.listRetentions();
    const groups = [
      ...custom.map((r) => ({ orgs: { in: [r.organizationId] }, days: r.days })),
      { orgs: { notIn: custom.map((r) => r.organizationId) }, days: config.defaultRetentionDays },
    ];
    let found = 0;
    for (const g of groups) {
      const old = await repo.findOld(t.from, expiryCutoff(now, g.days), g.orgs, batch - found);
      await repo.transition(
        old.map((d) => d._id),
        t.from,
        t.to,
        { endedAt: now, objectRemoved: false },
      );
      found += old.length;
      if (found >= batch) break;
    }
    return found;
  }

  /** Removes a round of objects that should be gone; returns how many records were handled. */
  async function removeRound(): Promise<number> {
    const docs = await repo.findUnremoved(batch);
    const gone = docs.filter((d) => OBJECTLESS_STATES.includes(d.state));
    if (gone.length === 0) return 0;
    await store.remove(gone.map((d) => d.objectKey));
    await repo.markRemoved(gone.map((d) => d._id));
    return gone.length;
  }

  const rounds = async (round: () => Promise<number>) => {
    let total = 0;
    for (let i = 0; i < MAX_ROUNDS; i++) {
      const n = await round();
      total += n;
      if (n < batch) break;
    }
    return total;
  };

  return {
    /** One sweep: abandoned uploads, then expiry, then removal of objects. */
    async sweep(): Promise<SweepResult> {
      const now = ctx.now();
      const abandoned = await rounds(() => abandonRound(now));
      const expired = await rounds(() => expireRound(now));
      const removed = await rounds(removeRound);
      return { abandoned, expired, removed };
    },
  };
}
