import { type Env, envValue } from "../host/paths.js";

/** How hard and how long `npm run bench` measures. */
export interface BenchSettings {
  connections: number;
  durationSec: number;
  trials: number;
  /**
   * Substrings of the target names to measure (BENCH_ONLY, comma-separated, case-insensitive); empty: every target.
   * The hello-world baseline is always measured; "agents" selects the agent rows.
   */
  only: string[];
}

/** BENCH_CONNECTIONS (20), BENCH_DURATION seconds per run (5), BENCH_TRIALS (3), BENCH_ONLY (every target). */
export function benchSettings(env: Env): BenchSettings {
  const int = (name: string, fallback: number) => {
    const value = Number(envValue(env, name) ?? fallback);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
    return value;
  };
  return {
    connections: int("BENCH_CONNECTIONS", 20),
    durationSec: int("BENCH_DURATION", 5),
    trials: int("BENCH_TRIALS", 3),
    only: (envValue(env, "BENCH_ONLY") ?? "")
      .split(",")
      .map((part) => part.trim().toLowerCase())
      .filter((part) => part !== ""),
  };
}

/** The median of some numbers (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Whether the target named `name` is measured under `only` (BENCH_ONLY): every target when it is empty. */
export function selected(only: readonly string[], name: string): boolean {
  const lower = name.toLowerCase();
  return only.length === 0 || only.some((part) => lower.includes(part));
}
