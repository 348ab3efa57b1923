import { createEnvReader, defaultServiceUrl, type Env } from "@conveyor/runtime";

/** The pipelines service's own settings, beyond the common backend ones. */
export interface PipelinesConfig {
  /** The agents service, which owns clusters. */
  readonly agentsUrl: string;
  /** The builds service, where the schedule ticker creates builds. */
  readonly buildsUrl: string;
  /** How often the schedule ticker looks for due schedules (SCHEDULE_TICK_S). */
  readonly scheduleTickMs: number;
}

/** Parses AGENTS_URL, BUILDS_URL and SCHEDULE_TICK_S once. */
export function readPipelinesConfig(env: Env): PipelinesConfig {
  const read = createEnvReader(env);
  return Object.freeze({
    agentsUrl: read.url("AGENTS_URL", defaultServiceUrl("agents")),
    buildsUrl: read.url("BUILDS_URL", defaultServiceUrl("builds")),
    scheduleTickMs: read.int("SCHEDULE_TICK_S", 10, { min: 1, max: 3600 }) * 1000,
  });
}
