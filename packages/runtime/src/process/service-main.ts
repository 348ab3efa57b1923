import type { ConnectRouter } from "@connectrpc/connect";
import type { Db } from "mongodb";
import { connectMongo } from "../data/mongo.js";
import { connectNats, createEventPublisher, type EventPublisher, type NatsHandle } from "../messaging/nats.js";
import { loopStats } from "../messaging/supervised-loop.js";
import { createHealthState } from "../rpc/health.js";
import { startRpcServer } from "../rpc/rpc-server.js";
import type { Env } from "./config.js";
import type { BackendService } from "./defaults.js";
import { createLogger, type Logger } from "./logger.js";
import { type BackendConfig, readBackendConfig } from "./service-config.js";
import { onShutdown } from "./shutdown.js";

/** What a backend service's setup receives: its config and its connections. */
export interface ServiceDeps {
  config: BackendConfig;
  logger: Logger;
  db: Db;
  nats: NatsHandle;
  events: EventPublisher;
  /** The environment, for a service's own extra configuration (parse it once, in its config.ts). */
  env: Env;
}

export interface ServiceDefinition {
  name: BackendService;
  /** Fully-qualified names of the RPC services served, for the health protocol. */
  serviceNames: string[];
  /** Creates repositories (and their indexes) and returns the Connect routes. */
  setup(deps: ServiceDeps): Promise<(router: ConnectRouter) => void>;
}

/**
 * The composition root every backend service's main.ts calls: config → MongoDB → NATS → routes → listen,
 * then graceful shutdown on SIGINT/SIGTERM (stop accepting, drain NATS, close MongoDB).
 */
export async function runService(def: ServiceDefinition, env: Env): Promise<void> {
  let logger = createLogger(def.name);
  try {
    const config = readBackendConfig(def.name, env);
    logger = createLogger(def.name, config.logLevel);
    const mongo = await connectMongo(config.mongodbUrl, config.mongodbDatabase, logger, {
      maxPoolSize: config.mongodbMaxPoolSize,
    });
    const nats = await connectNats(config.natsUrl, def.name, logger);
    const events = createEventPublisher(nats.js, logger);
    const routes = await def.setup({ config, logger, db: mongo.db, nats, events, env });
    const health = createHealthState(def.serviceNames);
    const server = await startRpcServer({
      host: config.host,
      port: config.port,
      healthPort: config.healthPort,
      routes,
      health,
      logger,
      stats: () => ({ mongoCommands: mongo.commandCounts(), loops: loopStats() }),
      maxConnectionAgeMs: config.maxConnectionAgeMs,
    });
    health.setServing(true);
    logger.info({ url: server.url }, `${def.name} service ready`);
    onShutdown(logger, [() => server.close(), () => nats.close(), () => mongo.close()]);
  } catch (err) {
    logger.fatal({ err }, `${def.name} service failed to start`);
    process.exit(1);
  }
}
