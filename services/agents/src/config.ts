import { createEnvReader, defaultServiceUrl, type Env } from "@conveyor/runtime";

/** The agents service's own settings, beyond the common backend ones. */
export interface AgentsConfig {
  /** The builds service, which owns jobs. */
  readonly buildsUrl: string;
  /** The pipelines service, asked which pipelines name a cluster before it is deleted. */
  readonly pipelinesUrl: string;
  /** Seconds between an idle agent's pings, told to agents at registration (always positive). */
  readonly pingIntervalS: number;
  /** Seconds between an agent's heartbeats (always positive). */
  readonly heartbeatIntervalS: number;
  /** Seconds between a running job's checks for cancelation (always positive). */
  readonly jobStatusIntervalS: number;
  /** An agent neither pinging nor heartbeating for this long is lost. */
  readonly lostAfterMs: number;
}

/**
 * Parses BUILDS_URL, PIPELINES_URL, AGENT_PING_INTERVAL_S, AGENT_HEARTBEAT_INTERVAL_S, AGENT_JOB_STATUS_INTERVAL_S and
 * AGENT_LOST_AFTER_S once. The lost window must leave room for at least two missed heartbeats.
 */
export function readAgentsConfig(env: Env): AgentsConfig {
  const r = createEnvReader(env);
  const heartbeatIntervalS = r.int("AGENT_HEARTBEAT_INTERVAL_S", 10, { min: 1, max: 600 });
  // The default window grows with the heartbeat interval, so that it always leaves room for two missed heartbeats.
  const lostAfterS = r.int("AGENT_LOST_AFTER_S", Math.max(60, 3 * heartbeatIntervalS), {
    min: 3 * heartbeatIntervalS,
    max: 86_400,
  });
  return Object.freeze({
    buildsUrl: r.url("BUILDS_URL", defaultServiceUrl("builds")),
    pipelinesUrl: r.url("PIPELINES_URL", defaultServiceUrl("pipelines")),
    pingIntervalS: r.int("AGENT_PING_INTERVAL_S", 2, { min: 1, max: 600 }),
    heartbeatIntervalS,
    jobStatusIntervalS: r.int("AGENT_JOB_STATUS_INTERVAL_S", 1, { min: 1, max: 600 }),
    lostAfterMs: lostAfterS * 1000,
  });
}
