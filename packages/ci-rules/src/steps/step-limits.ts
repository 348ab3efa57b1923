/**
 * Bounds of a pipeline definition, from Buildkite's documented limits (DOCS:pages/platform/limits.md): 4,000 jobs per
 * build ("Jobs per build", retries included) and 500 jobs created per pipeline upload, which also bounds the jobs one
 * step may ask for with `parallelism`. The YAML bounds keep the cost of reading a definition linear in its size.
 */
import { matrixJobCount } from "./matrix.js";
import type { PipelineStep, StepError } from "./step.js";

export const STEP_LIMITS = {
  /** Steps a pipeline's definition may hold (groups count their steps), as one upload may add. */
  maxSteps: 500,
  /** The largest `parallelism` of one step: no step creates more jobs than one upload may (Buildkite: 500). */
  maxParallelism: 500,
  /** Jobs a build may hold, every attempt included (Buildkite: 4,000). */
  maxBuildJobs: 4000,
  /** The largest pipeline YAML read, in bytes. */
  maxYamlBytes: 1024 * 1024,
  /**
   * How deep YAML collections may nest: far beyond any pipeline, far below what exhausts a parser's stack. Steps
   * travel between the services as protobuf Structs (two messages a level) and a protobuf reader stops at 100
   * levels: at 64, a pipeline nested ~50 levels deep was a 500 (found by the fuzz suite, test/fuzz.e2e.test.ts).
   */
  maxYamlDepth: 40,
  /** The size a YAML document may reach once its aliases are expanded, in bytes of source text. */
  maxExpandedYamlBytes: 2 * 1024 * 1024,
} as const;

/** The jobs a build creates for these steps: one per step, `parallelism` of them for a parallel one, a matrix's. */
export function jobCount(steps: readonly PipelineStep[]): number {
  let jobs = 0;
  for (const step of steps) {
    if (step.type === "script" && step.matrix) {
      jobs += matrixJobCount(step);
      continue;
    }
    const parallelism = step.type === "script" || step.type === "trigger" ? step.parallelism : undefined;
    jobs += parallelism === undefined ? 1 : Math.max(1, Math.floor(parallelism));
  }
  return jobs;
}

/** Why a pipeline's steps are too many for a build (on `field`), or none. */
export function stepCountProblems(steps: readonly PipelineStep[], field: string): StepError[] {
  if (steps.length > STEP_LIMITS.maxSteps) {
    return [{ field, code: `has too many steps (maximum is ${STEP_LIMITS.maxSteps}, got ${steps.length})` }];
  }
  const jobs = jobCount(steps);
  if (jobs > STEP_LIMITS.maxBuildJobs) {
    return [
      {
        field,
        code: `makes ${jobs} jobs per build, counting parallelism and matrices; a build may hold at most ${STEP_LIMITS.maxBuildJobs}`,
      },
    ];
  }
  return [];
}
