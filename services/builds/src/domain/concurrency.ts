/**
 * Concurrency groups (docs/compatibility.md#pipeline-yaml): at most `concurrency` jobs of a group run at once across an
 * organization. A job whose dependencies are met waits `limited` (REST shows it `scheduled`) until it holds one of the
 * group's slots. `ordered` jobs (the default) start in the order they were created: no job of the group created earlier
 * may still be waiting. `eager` jobs start whenever a slot is free. Pure.
 */
import { GROUP_WAITING_STATES, SLOT_HOLDING_STATES } from "./state-sets.js";
import type { JobState } from "./types.js";

/** A slot taken by a job whose promotion a crash interrupted is freed after this long. */
export const ABANDONED_SLOT_MS = 30_000;

/** A job of a concurrency group, as the gate reads it. */
export interface GroupJob {
  id: string;
  state: JobState;
  createdAt: Date;
  /** The step's limit. */
  concurrency: number;
  method: "ordered" | "eager";
}

/** One slot of a group, held by a job. */
export interface GroupSlot {
  slot: number;
  jobId: string;
  takenAt: Date;
}

/** Slots to free: their job finished (it is not among the group's unfinished jobs), or never left `limited`. */
export function staleSlots(slots: readonly GroupSlot[], jobs: readonly GroupJob[], now: Date): GroupSlot[] {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  return slots.filter((s) => {
    const job = byId.get(s.jobId);
    if (!job) return true;
    if (SLOT_HOLDING_STATES.includes(job.state)) return false;
    return now.getTime() - s.takenAt.getTime() > ABANDONED_SLOT_MS;
  });
}

/**
 * The limited jobs that may start now, each with the free slot it takes, in creation order (ties by id). An
 * ordered job is not admitted while a job created before it still waits (for its dependencies or for a slot); an
 * eager one only needs a free slot below its own limit.
 */
export function admissions(
  jobs: readonly GroupJob[],
  heldSlots: Iterable<number>,
): Array<{ jobId: string; slot: number }> {
  const held = new Set(heldSlots);
  const waiting = jobs
    .filter((j) => GROUP_WAITING_STATES.includes(j.state))
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const admitted: Array<{ jobId: string; slot: number }> = [];
  let earlierWaits = false;
  for (const job of waiting) {
    const slot = job.state === "limited" && !(job.method === "ordered" && earlierWaits) ? freeSlot(held, job) : null;
    if (slot === null) {
      earlierWaits = true;
      continue;
    }
    held.add(slot);
    admitted.push({ jobId: job.id, slot });
  }
  return admitted;
}

/** The lowest slot below the job's limit that no job holds, or null. */
function freeSlot(held: ReadonlySet<number>, job: GroupJob): number | null {
  for (let slot = 0; slot < job.concurrency; slot++) if (!held.has(slot)) return slot;
  return null;
}
