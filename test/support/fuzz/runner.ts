import fc from "fast-check";
import { describe, problemWith, type RawResponse, sendRaw } from "./check.js";
import { type FuzzRequest, type Operation, type RequestOptions, requestsOf } from "./operations.js";

export interface FuzzConfig extends RequestOptions {
  baseUrl: string;
  token: string;
  seed: number;
  /** When to stop sending (ms since the epoch). */
  deadline: number;
  /** Requests per operation per round. */
  batch?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /**
   * GET paths whose answers are the state a 4xx must not change (read with the fixtures as they are then), with the
   * run's token or their own Authorization header.
   */
  snapshotPaths: () => Array<string | { url: string; authorization: string }>;
  /** Called with each 2xx answer of a write, to follow a fixture that changed (a renamed pipeline). */
  onWritten?: (req: FuzzRequest, res: RawResponse) => void;
  /**
   * Snapshot right before each write batch instead of keeping the one after the last: for APIs whose reads change
   * state legitimately too (the agent's ping lets go of a job it runs).
   */
  freshBaseline?: boolean;
  /** Called after each batch with whether any answer was below 400: to re-create fixtures a valid request used up. */
  afterBatch?: (op: Operation, succeeded: boolean) => Promise<void>;
}

export interface Failure {
  op: string;
  problem: string;
  request: string;
  round: number;
}

export interface FuzzReport {
  seed: number;
  rounds: number;
  cases: number;
  /** Per operation: requests sent and the statuses seen (status → count). */
  perOp: Record<string, { cases: number; statuses: Record<string, number> }>;
  failures: Failure[];
  /** Batches of 4xx-only writes whose state was compared before and after. */
  stateChecks: number;
}

/** A 32-bit seed for one operation's batch in one round, from the run's seed. */
function seedFor(seed: number, opId: string, round: number): number {
  let h = (seed ^ Math.imul(round + 1, 0x9e3779b1)) >>> 0;
  for (const ch of opId) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h | 0;
}

async function pool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The state: each snapshot path's status and body, in order. */
async function snapshot(config: FuzzConfig): Promise<string[]> {
  const reads = config.snapshotPaths().map((r) => (typeof r === "string" ? { url: r } : r));
  const answers = await pool(reads, config.concurrency ?? 4, (read) =>
    sendRaw(config.baseUrl, config.token, { method: "GET", ...read }),
  );
  return answers.map((a, i) => `${reads[i]?.url} ${a.status} ${normalized(a.text)}`);
}

/**
 * A snapshot body without what changes on its own: a pipeline's build and job counts follow its builds' events
 * (eventually consistent, after a build the previous batch created), and the builds are in the snapshot themselves.
 */
function normalized(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), (key, value) => (/_(builds|jobs)_count$/.test(key) ? undefined : value));
  } catch {
    return text;
  }
}

/** A snapshot once two taken 250 ms apart agree (at most ~3 s). */
async function settled(config: FuzzConfig): Promise<string[]> {
  let last = await snapshot(config);
  for (let i = 0; i < 12; i++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const next = await snapshot(config);
    if (firstDifference(last, next) === undefined) return next;
    last = next;
  }
  return last;
}

/** The first difference between two snapshots, for the report. */
function firstDifference(before: string[], after: string[]): string | undefined {
  for (let i = 0; i < Math.max(before.length, after.length); i++) {
    const a = before[i] ?? "";
    const b = after[i] ?? "";
    if (a === b) continue;
    let at = 0;
    while (at < a.length && a[at] === b[at]) at++;
    return `${a.slice(0, a.indexOf(" "))}: before …${a.slice(Math.max(0, at - 80), at + 120)}… after …${b.slice(Math.max(0, at - 80), at + 120)}…`;
  }
  return undefined;
}

/**
 * Fuzzes the operations round by round until the deadline (the first round whole, however long it takes): each round sends a batch of generated requests to
 * every operation (writes alternate between rounds of wrong-only requests and rounds that include valid ones).
 * Every answer must be < 500, documented and match its schema; after a batch of writes that all failed, the
 * snapshot must be as before it.
 */
export async function fuzz(ops: Operation[], config: FuzzConfig): Promise<FuzzReport> {
  const report: FuzzReport = { seed: config.seed, rounds: 0, cases: 0, perOp: {}, failures: [], stateChecks: 0 };
  const batch = config.batch ?? 6;
  const seen = new Set<string>();
  const fail = (f: Failure) => {
    const key = `${f.op} ${f.problem.slice(0, 60)}`;
    if (seen.has(key)) return;
    seen.add(key);
    report.failures.push(f);
  };
  let baseline = await snapshot(config);
  // Whether nothing answered below 400 since the baseline was taken (with freshBaseline, else it is taken again).
  let current = true;
  for (let round = 0; Date.now() < config.deadline; round++) {
    report.rounds = round + 1;
    // A different operation order each round, from the seed.
    const order = fc.sample(fc.shuffledSubarray(ops, { minLength: ops.length }), {
      seed: seedFor(config.seed, "order", round),
      numRuns: 1,
    })[0] as Operation[];
    for (const op of order) {
      // The first round covers every operation whatever the time (a loaded machine must not leave one untried);
      // the deadline bounds the rounds after it.
      if (round > 0 && Date.now() >= config.deadline) break;
      const allowValid = round % 2 === 1 ? config.allowValid : () => false;
      if (op.writes && config.freshBaseline && !current) baseline = await snapshot(config);
      const cases = fc.sample(requestsOf(op, { ...config, allowValid }), {
        seed: seedFor(config.seed, op.id, round),
        numRuns: batch,
      });
      const answers = await pool(cases, config.concurrency ?? 4, async (req) => {
        try {
          return await sendRaw(config.baseUrl, config.token, req);
        } catch (err) {
          return { status: 0, contentType: "", text: err instanceof Error ? err.message : String(err) };
        }
      });
      const stats = report.perOp[op.id] ?? { cases: 0, statuses: {} };
      report.perOp[op.id] = stats;
      let wrote = false;
      answers.forEach((res, i) => {
        const req = cases[i] as FuzzRequest;
        report.cases++;
        stats.cases++;
        stats.statuses[res.status] = (stats.statuses[res.status] ?? 0) + 1;
        const problem = problemWith(req, res);
        if (problem) fail({ op: op.id, problem, request: describe(req), round });
        if (res.status < 400) {
          wrote = true;
          if (op.writes) config.onWritten?.(req, res);
        }
      });
      current = !wrote && (op.writes || current);
      // A read, or a write that succeeded where the next batch takes its own baseline: nothing to compare.
      if (!op.writes || (wrote && config.freshBaseline)) {
        await config.afterBatch?.(op, wrote);
        continue;
      }
      // After a write that succeeded, wait for what follows it on its own (a build's jobs, counters) to settle.
      const after = wrote ? await settled(config) : await snapshot(config);
      if (!wrote) {
        report.stateChecks++;
        const diff = firstDifference(baseline, after);
        if (diff) {
          fail({
            op: op.id,
            problem: `4xx changed state: ${diff}`,
            request: cases.map(describe).join("\n    "),
            round,
          });
        }
      }
      baseline = after;
      await config.afterBatch?.(op, wrote);
    }
  }
  return report;
}

/** The report as lines: the seed, totals, each operation's cases and statuses, then the failures. */
export function formatReport(report: FuzzReport): string {
  const lines = [
    `fuzz: FUZZ_SEED=${report.seed}: ${report.cases} cases in ${report.rounds} rounds over ${Object.keys(report.perOp).length} operations, ${report.stateChecks} state checks after 4xx-only write batches, ${report.failures.length} failures`,
  ];
  for (const [op, s] of Object.entries(report.perOp).sort()) {
    const statuses = Object.entries(s.statuses)
      .map(([k, v]) => `${k}×${v}`)
      .join(" ");
    lines.push(`  ${op}: ${s.cases} cases, ${statuses}`);
  }
  for (const f of report.failures) lines.push(`FAIL ${f.op} (round ${f.round}): ${f.problem}\n    ${f.request}`);
  return lines.join("\n");
}
