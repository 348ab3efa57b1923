/**
 * The pure part of `npm run faults` (deploy/src/faults/faults.ts): what the REST API answered while a dependency was down
 * (probe samples and their summary), and the invariants checked once every build has finished.
 */

/** The servers killed in turn and held down, as the fault drill names them. */
export type ServerDependency = "mongodb" | "nats" | "s3";
/** The stack's processes, killed in turn and started again by the launcher's supervisor at once. */
export type ProcessDependency =
  | "identity"
  | "pipelines"
  | "builds"
  | "artifacts"
  | "agents"
  | "notifications"
  | "gateway";
/** What the drill kills. */
export type Dependency = ServerDependency | ProcessDependency;

/** Job states a job never leaves (the REST names; docs/compatibility.md#job-states). */
export const TERMINAL_JOB_STATES: ReadonlySet<string> = new Set([
  "passed",
  "failed",
  "timed_out",
  "canceled",
  "skipped",
  "broken",
  "expired",
  "waiting_failed",
  "blocked_failed",
  "unblocked",
  "unblocked_failed",
]);

/** Build states a build never leaves. */
export const TERMINAL_BUILD_STATES: ReadonlySet<string> = new Set([
  "passed",
  "failed",
  "canceled",
  "skipped",
  "not_run",
]);

/** One REST call made while a dependency was down or coming back. */
export interface ProbeSample {
  dependency: Dependency;
  route: string;
  /** "down": the server was killed and not started again yet; "back": it was started again. */
  phase: "down" | "back";
  /** Milliseconds since the server was killed. */
  at: number;
  /** The HTTP status, or 0 when no answer came (connection error or the client's own timeout). */
  status: number;
  ms: number;
  /** Whether the body was a JSON object with a string `message` (every error answer must be). */
  jsonMessage: boolean;
  /** Set when the client gave up waiting (the answer took longer than the RPC deadline plus a margin). */
  hung?: boolean;
}

/** Per dependency: what the probes saw. */
export interface OutageSummary {
  dependency: Dependency;
  downMs: number;
  samples: number;
  /** Count of answers by status ("503", "200", "hang", "error") to calls made while the server was down. */
  byStatus: Record<string, number>;
  /** The same for calls made after it was started again, until every route had succeeded five times in a row. */
  afterRestart: Record<string, number>;
  /** Calls that were running at some point while the server was down (artifact uploads: see faults.ts). */
  spanning?: number;
  /** Answers that break the rule: 500s and other 5xx but 503/504, errors without a JSON message, hangs. */
  bad: number;
  maxMs: number;
  /**
   * Milliseconds from the restart until every probed route answered with success again (and kept doing so), or
   * undefined when some route never did.
   */
  recoveryMs: number | undefined;
}

/** How many of the intervals ([start, end], ms) overlap the window [from, to]. */
export function overlapping(intervals: ReadonlyArray<readonly [number, number]>, from: number, to: number): number {
  return intervals.filter(([start, end]) => start <= to && end >= from).length;
}

/** The status key a sample is counted under. */
export function statusKey(s: Pick<ProbeSample, "status" | "hung">): string {
  if (s.hung) return "hang";
  if (s.status === 0) return "error";
  return String(s.status);
}

/**
 * Whether a sample breaks the rule for an API whose dependency is down: answers are a success, a client error, or
 * 503 (or 504, a deadline) with a JSON message; never a 500, never a hang past the deadline (and, but for the
 * gateway itself being down, always an answer).
 */
export function isBadSample(s: ProbeSample): boolean {
  // With one gateway, nothing answers while it is down: a refused connection then is the truth, not a fault.
  if (s.dependency === "gateway" && s.phase === "down" && s.status === 0 && !s.hung) return false;
  if (s.hung || s.status === 0) return true;
  if (s.status >= 500) return !((s.status === 503 || s.status === 504) && s.jsonMessage);
  if (s.status >= 400) return !s.jsonMessage;
  return false;
}

/**
 * Summarizes the samples of one outage: `restartAt` is when the server was started again (ms since the kill).
 * Recovery is the time from the restart to the first success of each route after which that route never failed
 * again, the largest over the routes.
 */
export function summarizeOutage(
  dependency: Dependency,
  samples: readonly ProbeSample[],
  restartAt: number,
): OutageSummary {
  const mine = samples.filter((s) => s.dependency === dependency);
  const byStatus: Record<string, number> = {};
  const afterRestart: Record<string, number> = {};
  for (const s of mine) {
    const into = s.phase === "down" ? byStatus : afterRestart;
    into[statusKey(s)] = (into[statusKey(s)] ?? 0) + 1;
  }
  const routes = [...new Set(mine.map((s) => s.route))];
  let recoveryMs: number | undefined = 0;
  for (const route of routes) {
    const ofRoute = mine.filter((s) => s.route === route).sort((a, b) => a.at - b.at);
    const lastFailure = ofRoute.findLastIndex((s) => !(s.status >= 200 && s.status < 300));
    const firstGood = ofRoute[lastFailure + 1];
    if (!firstGood) {
      recoveryMs = undefined;
      break;
    }
    // A route that never failed recovered at once.
    const answeredAt = firstGood.at + firstGood.ms;
    recoveryMs = Math.max(recoveryMs, lastFailure < 0 ? 0 : Math.max(0, answeredAt - restartAt));
  }
  return {
    dependency,
    downMs: restartAt,
    samples: mine.length,
    byStatus,
    afterRestart,
    bad: mine.filter(isBadSample).length,
    maxMs: mine.reduce((m, s) => Math.max(m, s.ms), 0),
    recoveryMs,
  };
}

/** A build as the REST list shows it (the fields the checks read). */
export interface BuildView {
  id: string;
  number: number;
  state: string;
  jobs: Array<{ id: string; type: string; state: string; retried?: boolean }>;
}

/** A pipeline's counters as REST shows them. */
export interface PipelineCounters {
  scheduled_builds_count: number;
  running_builds_count: number;
  scheduled_jobs_count: number;
  running_jobs_count: number;
  waiting_jobs_count: number;
}

/** A durable JetStream consumer's backlog. */
export interface ConsumerBacklog {
  name: string;
  pending: number;
  ackPending: number;
  redelivered: number;
}

export interface InvariantInput {
  /** Numbers of the builds whose create was answered 201. */
  acknowledged: readonly number[];
  builds: readonly BuildView[];
  /** The lines of the marks file: one job id per run of a command job. */
  runs: readonly string[];
  counters: PipelineCounters | undefined;
  consumers: readonly ConsumerBacklog[];
  outages: readonly OutageSummary[];
}

export interface InvariantReport {
  acknowledged: number;
  found: number;
  missing: number[];
  /**
   * Builds found whose create was not answered 201 (a create cut off by the outage after its write): not a broken
   * invariant, since such an answer promised nothing, but a client that tries again makes a second build.
   */
  unacknowledged: number[];
  buildsNotFinished: number;
  buildsByState: Record<string, number>;
  jobs: number;
  jobsByState: Record<string, number>;
  jobsNotTerminal: string[];
  jobsListedTwice: string[];
  jobsRunTwice: string[];
  /** Command jobs that finished as passed without having run (no mark). */
  passedWithoutRun: string[];
  /** Counters that differ from what the listing implies (all zero once every build finished). */
  counterMismatches: string[];
  stuckConsumers: string[];
  failures: string[];
}

function tally(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

/**
 * What the listing implies for a pipeline's counters (docs/compatibility.md#job-states states; jobCounts in the builds
 * service): every job but waiters (bookkeeping that never runs) and jobs replaced by their retry.
 */
export function expectedCounters(builds: readonly BuildView[]): PipelineCounters {
  const counted = builds.flatMap((b) => b.jobs.filter((j) => j.type !== "waiter" && !j.retried));
  const count = (states: string[]) => counted.filter((j) => states.includes(j.state)).length;
  return {
    scheduled_builds_count: builds.filter((b) => b.state === "scheduled").length,
    running_builds_count: builds.filter((b) => ["running", "failing", "canceling"].includes(b.state)).length,
    scheduled_jobs_count: count(["scheduled", "assigned"]),
    running_jobs_count: count(["accepted", "running", "canceling", "timing_out"]),
    waiting_jobs_count: count(["pending", "waiting", "blocked", "limiting", "limited"]),
  };
}

/** How the pipeline's counters differ from what the listing implies, one entry per counter; none when they agree. */
export function countersDiffer(counters: PipelineCounters | undefined, builds: readonly BuildView[]): string[] {
  if (!counters) return ["pipeline counters unreadable"];
  const expected = expectedCounters(builds);
  return (Object.keys(expected) as Array<keyof PipelineCounters>)
    .filter((key) => counters[key] !== expected[key])
    .map((key) => `${key} ${counters[key]} (listing: ${expected[key]})`);
}

/** Checks the invariants; `failures` lists each broken one in a sentence. */
export function checkInvariants(input: InvariantInput): InvariantReport {
  const byNumber = new Set(input.builds.map((b) => b.number));
  const acked = new Set(input.acknowledged);
  const missing = input.acknowledged.filter((n) => !byNumber.has(n));
  const jobs = input.builds.flatMap((b) => b.jobs.filter((j) => j.type === "script"));
  const seen = new Map<string, number>();
  for (const j of jobs) seen.set(j.id, (seen.get(j.id) ?? 0) + 1);
  const runs = new Map<string, number>();
  for (const id of input.runs) runs.set(id, (runs.get(id) ?? 0) + 1);
  const counterMismatches = countersDiffer(input.counters, input.builds);
  const report: InvariantReport = {
    acknowledged: input.acknowledged.length,
    found: input.builds.length,
    missing,
    unacknowledged: input.builds
      .map((b) => b.number)
      .filter((n) => !acked.has(n))
      .sort((a, b) => a - b),
    buildsNotFinished: input.builds.filter((b) => !TERMINAL_BUILD_STATES.has(b.state)).length,
    buildsByState: tally(input.builds.map((b) => b.state)),
    jobs: jobs.length,
    jobsByState: tally(jobs.map((j) => j.state)),
    jobsNotTerminal: jobs.filter((j) => !TERMINAL_JOB_STATES.has(j.state)).map((j) => `${j.id} ${j.state}`),
    jobsListedTwice: [...seen].filter(([, n]) => n > 1).map(([id]) => id),
    jobsRunTwice: [...runs].filter(([, n]) => n > 1).map(([id, n]) => `${id} ×${n}`),
    passedWithoutRun: jobs.filter((j) => j.state === "passed" && !runs.has(j.id)).map((j) => j.id),
    counterMismatches,
    stuckConsumers: input.consumers
      .filter((c) => c.pending > 0 || c.ackPending > 0)
      .map((c) => `${c.name} (pending ${c.pending}, ack pending ${c.ackPending})`),
    failures: [],
  };
  const f = report.failures;
  if (missing.length > 0)
    f.push(`${missing.length} acknowledged builds not found: #${missing.slice(0, 10).join(", #")}`);
  if (report.buildsNotFinished > 0) f.push(`${report.buildsNotFinished} builds not finished`);
  if (report.jobsNotTerminal.length > 0) f.push(`${report.jobsNotTerminal.length} jobs not in a terminal state`);
  if (report.jobsListedTwice.length > 0) f.push(`${report.jobsListedTwice.length} job ids listed twice`);
  if (report.jobsRunTwice.length > 0) f.push(`${report.jobsRunTwice.length} jobs ran more than once`);
  if (report.passedWithoutRun.length > 0) f.push(`${report.passedWithoutRun.length} jobs passed without running`);
  if (counterMismatches.length > 0) f.push(`pipeline counters did not converge: ${counterMismatches.join("; ")}`);
  if (report.stuckConsumers.length > 0) f.push(`event consumers stuck: ${report.stuckConsumers.join("; ")}`);
  for (const o of input.outages) {
    if (o.bad > 0) f.push(`${o.dependency} outage: ${o.bad} answers were 500s, hangs or errors without a JSON message`);
    if (o.recoveryMs === undefined) f.push(`${o.dependency} outage: the API did not recover after the restart`);
  }
  return report;
}

const seconds = (ms: number | undefined) => (ms === undefined ? "never" : `${(ms / 1000).toFixed(1)} s`);
const counts = (r: Record<string, number>) =>
  Object.entries(r)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k}: ${n}`)
    .join(", ") || "none";

/** The printed table: one line per outage, then the invariants, each with ok or FAILED. */
export function formatReport(outages: readonly OutageSummary[], report: InvariantReport): string[] {
  const lines = [
    `${"dependency".padEnd(10)} ${"down".padStart(7)} ${"probes".padStart(6)} ${"max latency".padStart(11)} ${"recovery".padStart(8)}  answers while down | after the restart`,
  ];
  for (const o of outages) {
    lines.push(
      `${o.dependency.padEnd(10)} ${seconds(o.downMs).padStart(7)} ${String(o.samples).padStart(6)} ` +
        `${`${o.maxMs} ms`.padStart(11)} ${seconds(o.recoveryMs).padStart(8)}  ${counts(o.byStatus)} | ${counts(o.afterRestart)}` +
        (o.bad > 0 ? `  (${o.bad} bad)` : "") +
        (o.spanning === undefined ? "" : `; ${o.spanning} artifact uploads ran across the outage`),
    );
  }
  const check = (ok: boolean) => (ok ? "ok" : "FAILED");
  lines.push(
    "",
    `builds acknowledged (201) ${report.acknowledged}, found ${report.found}, missing ${report.missing.length}  ${check(report.missing.length === 0)}` +
      (report.unacknowledged.length > 0 ? ` (found but not acknowledged: #${report.unacknowledged.join(", #")})` : ""),
    `builds by state: ${counts(report.buildsByState)}  ${check(report.buildsNotFinished === 0)}`,
    `command jobs ${report.jobs} by state: ${counts(report.jobsByState)}`,
    `jobs not terminal ${report.jobsNotTerminal.length}, listed twice ${report.jobsListedTwice.length}  ${check(report.jobsNotTerminal.length + report.jobsListedTwice.length === 0)}`,
    `jobs run twice ${report.jobsRunTwice.length}, passed without running ${report.passedWithoutRun.length}  ${check(report.jobsRunTwice.length + report.passedWithoutRun.length === 0)}`,
    `pipeline counters: ${report.counterMismatches.join("; ") || "match the listing"}  ${check(report.counterMismatches.length === 0)}`,
    `event consumers: ${report.stuckConsumers.join("; ") || "none pending"}  ${check(report.stuckConsumers.length === 0)}`,
  );
  return lines;
}
