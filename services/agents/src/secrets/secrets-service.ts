import type { Client } from "@connectrpc/connect";
import type { BuildsService } from "@conveyor/proto/builds";
import { type Logger, repeat } from "@conveyor/runtime";
import type { ClusterRepository } from "../store/cluster-repository.js";
import type { SecretRepository } from "./secret-repository.js";
import type { SecretsConfig } from "./secrets-config.js";
import { createSecretsRpcs, rewrapSecrets } from "./secrets-rpc.js";

const DAY_MS = 86_400_000;
/** How often old reads are pruned and data keys rewrapped. */
const DUTY_MS = 3_600_000;

/** What the cluster secrets are made of. */
export interface SecretsDeps {
  secrets: SecretRepository;
  clusters: Pick<ClusterRepository, "findCluster">;
  builds: Pick<Client<typeof BuildsService>, "getJob" | "getBuild">;
  config: SecretsConfig;
  logger: Logger;
  now?: () => Date;
}

/**
 * The SecretsService and its duties: pruning reads older than SECRET_READS_RETENTION_DAYS, and rewrapping data keys
 * sealed under an earlier key under the current one (at start, then hourly).
 */
export function createSecrets(deps: SecretsDeps) {
  const now = deps.now ?? (() => new Date());
  const { secrets, config, logger } = deps;
  const service = createSecretsRpcs({ ...deps, keyRing: config.keyRing, now });

  const prune = async () => {
    const removed = await secrets.pruneReads(new Date(now().getTime() - config.readsRetentionDays * DAY_MS));
    if (removed > 0) logger.info({ removed }, "old cluster secret reads pruned");
  };
  const rewrap = async () => {
    if (!config.keyRing) return;
    const { rewrapped, unopened } = await rewrapSecrets(secrets, config.keyRing);
    if (rewrapped > 0) logger.info({ rewrapped }, "cluster secrets rewrapped under the current key");
    if (unopened.length > 0)
      logger.warn({ secretIds: unopened.slice(0, 50) }, "cluster secrets whose key this process does not hold");
  };

  return {
    service,
    prune,
    rewrap,
    /** Starts the hourly duties (and a first rewrap now). */
    start() {
      repeat(prune, { what: "cluster secret reads pruning", everyMs: DUTY_MS, logger });
      repeat(rewrap, { what: "cluster secrets rewrap", everyMs: DUTY_MS, logger });
      void rewrap().catch((err) => logger.warn({ err }, "cluster secrets not rewrapped yet"));
    },
  };
}
