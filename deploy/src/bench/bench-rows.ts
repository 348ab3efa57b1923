/** The agent rows and the CPU-per-create line of `npm run bench`'s summary (bench.ts). */
import type { AgentBenchResult } from "./bench-agents.js";
import { median } from "./bench-stats.js";

/** The agent rows of the summary. */
export function printAgentRows(r: AgentBenchResult, say: (line: string) => void): void {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 1 : 0) : "–");
  say(`\nagents${" ".repeat(28)} ${"count".padStart(9)} ${"p50 ms".padStart(7)} ${"p99 ms".padStart(7)}`);
  say(
    `${"dispatch: create → accepted, poll".padEnd(34)} ${String(r.dispatch.builds).padStart(9)} ${f(r.dispatch.p50Ms).padStart(7)} ${f(r.dispatch.p99Ms).padStart(7)}`,
  );
  const s = r.streaming;
  if (s) {
    say(
      `${"dispatch: create → accepted, stream".padEnd(34)} ${String(s.builds).padStart(9)} ${f(s.p50Ms).padStart(7)} ${f(s.p99Ms).padStart(7)}`,
    );
    say(
      `${"gap: job end → next accepted, stream".padEnd(34)} ${String(s.gap.builds).padStart(9)} ${f(s.gap.p50Ms).padStart(7)} ${f(s.gap.p99Ms).padStart(7)}`,
    );
  } else say("dispatch, streaming: skipped (the stack has no TLS port)");
  const p = r.pings;
  say(
    `${`ping, ${p.agents} idle agents / ${p.intervalMs / 1000} s`.padEnd(34)} ${String(p.idle.pings).padStart(9)} ${f(p.idle.p50Ms).padStart(7)} ${f(p.idle.p99Ms).padStart(7)}${p.idle.errors ? `   (${p.idle.errors} errors!)` : ""}`,
  );
  say(
    `${"ping, while builds run".padEnd(34)} ${String(p.withBuilds.pings).padStart(9)} ${f(p.withBuilds.p50Ms).padStart(7)} ${f(p.withBuilds.p99Ms).padStart(7)}${p.withBuilds.errors ? `   (${p.withBuilds.errors} errors!)` : ""}`,
  );
  if (p.idle.mongoCommandsPerPing !== undefined)
    say(`database commands per idle ping (agents service): ${p.idle.mongoCommandsPerPing.toFixed(3)}`);
  const cpu = Object.entries(p.cpuMsPerPing).filter(([, ms]) => Number.isFinite(ms) && ms > 0.0005);
  if (cpu.length > 0) say(`CPU ms per idle ping: ${cpu.map(([name, ms]) => `${name} ${ms.toFixed(3)}`).join(", ")}`);
  const life = r.jobLife;
  const perJob = Object.entries(life.cpuMsPerJob).filter(([, ms]) => Number.isFinite(ms) && ms > 0.005);
  if (perJob.length > 0) {
    const total = perJob.reduce((sum, [, ms]) => sum + ms, 0);
    say(
      `CPU ms per job (assignment → finish, ${life.chunksPerJob} log chunks, ${life.jobs} jobs): ${perJob.map(([name, ms]) => `${name} ${ms.toFixed(1)}`).join(", ")} (total ${total.toFixed(1)})`,
    );
  }
}

/** The median CPU milliseconds per request of each process over the trials of each POST target. */
export function printCpuPerCreate(
  results: ReadonlyArray<{ target: string; cpuMsPerRequest?: Record<string, number> }>,
  say: (line: string) => void,
) {
  const byTarget = new Map<string, (typeof results)[number][]>();
  for (const r of results) if (r.cpuMsPerRequest) byTarget.set(r.target, [...(byTarget.get(r.target) ?? []), r]);
  for (const [target, runs] of byTarget) {
    const names = Object.keys(runs[0]?.cpuMsPerRequest ?? {});
    const per = names
      .map((name) => [name, median(runs.map((r) => r.cpuMsPerRequest?.[name] ?? Number.NaN))] as const)
      .filter(([, v]) => Number.isFinite(v));
    const total = per.reduce((sum, [, v]) => sum + v, 0);
    say(
      `CPU ms per request, ${target}: ${per.map(([name, v]) => `${name} ${v.toFixed(1)}`).join(", ")} (total ${total.toFixed(1)})`,
    );
  }
}
