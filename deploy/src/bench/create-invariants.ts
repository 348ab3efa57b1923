/**
 * The pure part of the bench's check of build creation (bench-creates.ts): every acknowledged create found once with
 * a number of its own, the pipeline's counters what its builds imply, and no read older than a change its client saw
 * acknowledged.
 */
import {
  type BuildView,
  countersDiffer,
  type PipelineCounters,
  TERMINAL_BUILD_STATES,
} from "../faults/fault-invariants.js";

/** Where each build state stands in a build's life: a build never goes back to a lower rank. */
const STATE_RANK: Readonly<Record<string, number>> = {
  scheduled: 0,
  running: 1,
  failing: 1,
  blocked: 1,
  canceling: 2,
  passed: 3,
  failed: 3,
  canceled: 3,
  skipped: 3,
  not_run: 3,
};

/**
 * Whether a read showing `read` is older than the state `acknowledged` its client was answered with: an earlier
 * state, or another finished state than the one a finished build was acknowledged in (a finished build never
 * changes). An unknown state read is stale too: it is not one the API documents.
 */
export function staleState(acknowledged: string, read: string): boolean {
  const readRank = STATE_RANK[read];
  if (readRank === undefined) return true;
  if (TERMINAL_BUILD_STATES.has(acknowledged)) return read !== acknowledged;
  return readRank < (STATE_RANK[acknowledged] ?? 0);
}

/** What the stale-read probe saw: builds it created, canceled and read back while others were being created. */
export interface StaleProbe {
  /** Builds it created (answered 201). */
  created: number;
  /** Reads that were checked against the last state acknowledged to it. */
  reads: number;
  /** Conditional reads (If-None-Match with an ETag from before a change): each must answer 200 with the change. */
  conditional: number;
  /** Each read older than what the probe had been answered, in a sentence. */
  stale: string[];
  /** Answers that were not what the API documents (a create that was not 201, a cancel that was not 200, …). */
  errors: string[];
}

export interface CreateCheckInput {
  /** Creates answered 201 (the load's and the probe's). */
  acknowledged: number;
  /**
   * Creates in flight when a run of the load generator ended (at most one per connection and run): it drops their
   * answers, so they may have made builds that no 201 counted.
   */
  inFlight: number;
  /** The pipeline's highest build number before the first create: the builds above it are the ones created. */
  after: number;
  /** Every build of the pipeline, as the REST list shows it. */
  builds: readonly BuildView[];
  counters: PipelineCounters | undefined;
}

export interface CreateCheck {
  acknowledged: number;
  found: number;
  duplicateNumbers: number[];
  jobsListedTwice: number;
  counterMismatches: string[];
  /** Each broken invariant, in a sentence; empty when creation kept them all. */
  failures: string[];
}

/** Checks what the creates left: a build per acknowledged create, numbers unique, job ids unique, counters exact. */
export function checkCreates(input: CreateCheckInput): CreateCheck {
  const numbers = new Map<number, number>();
  for (const b of input.builds) numbers.set(b.number, (numbers.get(b.number) ?? 0) + 1);
  const jobIds = new Set<string>();
  let jobsListedTwice = 0;
  for (const job of input.builds.flatMap((b) => b.jobs)) {
    if (jobIds.has(job.id)) jobsListedTwice++;
    jobIds.add(job.id);
  }
  const check: CreateCheck = {
    acknowledged: input.acknowledged,
    found: input.builds.filter((b) => b.number > input.after).length,
    duplicateNumbers: [...numbers].filter(([, n]) => n > 1).map(([number]) => number),
    jobsListedTwice,
    counterMismatches: countersDiffer(input.counters, input.builds),
    failures: [],
  };
  const f = check.failures;
  if (check.found < check.acknowledged)
    f.push(`${check.acknowledged - check.found} acknowledged creates have no build`);
  if (check.found > check.acknowledged + input.inFlight)
    f.push(`${check.found - check.acknowledged - input.inFlight} builds were created without a 201 answer`);
  if (check.duplicateNumbers.length > 0)
    f.push(`numbers given twice: #${check.duplicateNumbers.slice(0, 10).join(", #")}`);
  if (jobsListedTwice > 0) f.push(`${jobsListedTwice} job ids listed twice`);
  if (check.counterMismatches.length > 0)
    f.push(`pipeline counters did not converge: ${check.counterMismatches.join("; ")}`);
  return check;
}

const count = (n: number) => n.toLocaleString("en-US");

/** Whether the probe ran (it created builds) and saw nothing stale or wrong. */
const probeHeld = (p: StaleProbe) => p.created > 0 && p.stale.length === 0 && p.errors.length === 0;

/** The printed lines: the creates' invariants and the probe's reads, each with ok or FAILED. */
export function formatCreateCheck(check: CreateCheck, probe: StaleProbe): string[] {
  const ok = (good: boolean) => (good ? "ok" : "FAILED");
  const lines = [
    `creates: ${count(check.acknowledged)} acknowledged (201), ${count(check.found)} found` +
      (check.found > check.acknowledged
        ? ` (${count(check.found - check.acknowledged)} answered after their run ended), `
        : ", ") +
      `${check.duplicateNumbers.length === 0 ? "numbers unique" : `${check.duplicateNumbers.length} numbers given twice`}, ` +
      `${check.counterMismatches.length === 0 ? "counters exact" : "counters wrong"}  ${ok(check.failures.length === 0)}`,
    `stale reads while creating and canceling: ${count(probe.stale.length)} of ${count(probe.reads)} ` +
      `(${count(probe.created)} builds created, canceled and read back; ${count(probe.conditional)} conditional reads)  ` +
      ok(probeHeld(probe)),
  ];
  for (const failure of check.failures) lines.push(`  ${failure}`);
  for (const stale of probe.stale.slice(0, 10)) lines.push(`  stale: ${stale}`);
  for (const error of probe.errors.slice(0, 10)) lines.push(`  error: ${error}`);
  return lines;
}

/** Whether the check and the probe found nothing wrong. */
export function createsHeld(check: CreateCheck, probe: StaleProbe): boolean {
  return check.failures.length === 0 && probeHeld(probe);
}
