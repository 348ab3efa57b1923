import { createEnvReader, defaultServiceUrl, type Env } from "@conveyor/runtime";

/** The pipelines service's own settings, beyond the common backend ones. */
export interface PipelinesConfig {
  /** The agents service, which owns clusters. */
  readonly agentsUrl: string;
}

/** Parses AGENTS_URL once. */
export function readPipelinesConfig(env: Env): PipelinesConfig {
  return Object.freeze({ agentsUrl: createEnvReader(env).url("AGENTS_URL", defaultServiceUrl("agents")) });
}
