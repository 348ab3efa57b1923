import type { Client } from "@connectrpc/connect";
import type { BuildsService } from "@conveyor/proto/builds";
import { type Logger, repeat } from "@conveyor/runtime";
import type { ClusterRepository } from "../store/cluster-repository.js";
import type { OidcConfig } from "./oidc-config.js";
import type { OidcKeyRepository } from "./oidc-key-repository.js";
import { createOidcRpcs } from "./oidc-rpc.js";
import { createOidcSigner } from "./oidc-signer.js";

/** How often keys no token needs any more are deleted. */
const PRUNE_MS = 3_600_000;

export interface OidcDeps {
  keys: OidcKeyRepository;
  builds: Pick<Client<typeof BuildsService>, "getJob" | "getBuild">;
  clusters: Pick<ClusterRepository, "findCluster">;
  config: OidcConfig;
  logger: Logger;
  now?: () => Date;
}

/** The OidcService and its duties: a first signing key at start, and pruning retired keys hourly. */
export function createOidc(deps: OidcDeps) {
  const now = deps.now ?? (() => new Date());
  const { config, logger } = deps;
  const signer = config.keyRing
    ? createOidcSigner({ keys: deps.keys, keyRing: config.keyRing, maxLifetimeS: config.maxLifetimeS, logger, now })
    : null;
  const service = createOidcRpcs({
    signer,
    builds: deps.builds,
    clusters: deps.clusters,
    limits: { defaultLifetimeS: config.defaultLifetimeS, maxLifetimeS: config.maxLifetimeS },
    now,
  });
  return {
    service,
    signer,
    /** Makes the first key when there is none, and starts the pruning. */
    async start(): Promise<void> {
      if (!signer) {
        logger.warn("CREDENTIALS_ENCRYPTION_KEY is unset: jobs cannot have OIDC tokens");
        return;
      }
      await signer.ensureKey();
      repeat(
        async () => {
          const removed = await signer.prune();
          if (removed > 0) logger.info({ removed }, "retired OIDC signing keys deleted");
        },
        { what: "OIDC key pruning", everyMs: PRUNE_MS, logger },
      );
    },
  };
}
