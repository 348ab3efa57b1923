import { ConfigError, createEnvReader, type Env } from "./config.js";
import {
  type BackendService,
  DEFAULT_MONGODB_URL,
  DEFAULT_NATS_URL,
  DEFAULT_PORTS,
  HEALTH_PORT_OFFSET,
} from "./defaults.js";

/** Configuration every backend service reads from its environment. */
export interface BackendConfig {
  readonly service: BackendService;
  readonly host: string;
  readonly port: number;
  readonly healthPort: number;
  readonly mongodbUrl: string;
  readonly mongodbDatabase: string;
  /**
   * Connections to the database at most. The bundled FerretDB (SQLite) writes one at a time and slows down under
   * contention: the launcher asks for few connections there (see deploy/src/stack/stack.ts); a real MongoDB takes more.
   */
  readonly mongodbMaxPoolSize: number;
  readonly natsUrl: string;
  readonly logLevel: string;
  /** How long an HTTP/2 connection is served before the client is asked to open a new one; 0 for ever. */
  readonly maxConnectionAgeMs: number;
}

/**
 * Parses and freezes a backend service's configuration: HOST, PORT, HEALTH_PORT, MONGODB_URL, MONGODB_DATABASE,
 * MONGODB_MAX_POOL_SIZE, NATS_URL, LOG_LEVEL, MAX_CONNECTION_AGE_S.
 */
export function readBackendConfig(service: BackendService, env: Env): BackendConfig {
  const r = createEnvReader(env);
  const port = r.int("PORT", DEFAULT_PORTS[service], { min: 0, max: 65535 });
  const logLevel = r.string("LOG_LEVEL", "info");
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "${logLevel}"`);
  }
  return Object.freeze({
    service,
    host: r.string("HOST", "127.0.0.1"),
    port,
    healthPort: r.int("HEALTH_PORT", port === 0 ? 0 : port + HEALTH_PORT_OFFSET, { min: 0, max: 65535 }),
    mongodbUrl: r.string("MONGODB_URL", DEFAULT_MONGODB_URL),
    mongodbDatabase: r.string("MONGODB_DATABASE", `conveyor_${service}`),
    mongodbMaxPoolSize: r.int("MONGODB_MAX_POOL_SIZE", 20, { min: 1, max: 500 }),
    natsUrl: r.string("NATS_URL", DEFAULT_NATS_URL),
    logLevel,
    // Clients keep one HTTP/2 connection for every call, and a layer-4 balancer (a Kubernetes Service) places
    // connections, not calls: ending each connection after an age spreads long-lived clients over the replicas,
    // including ones started after them.
    maxConnectionAgeMs: r.int("MAX_CONNECTION_AGE_S", 120, { min: 0, max: 86_400 }) * 1000,
  });
}
