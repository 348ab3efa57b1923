import { AgentsService } from "@conveyor/proto/agents";
import { BuildsService } from "@conveyor/proto/builds";
import { OidcService } from "@conveyor/proto/oidc";
import { SecretsService } from "@conveyor/proto/secrets";
import {
  createMongoOutboxStore,
  createServiceClient,
  jetStreamPublish,
  type OutboxDoc,
  repeat,
  runService,
} from "@conveyor/runtime";
import { createAgentsDomain } from "./agents-service.js";
import { readAgentsConfig } from "./config.js";
import { followEvents } from "./events/followed-events.js";
import { readOidcConfig } from "./oidc/oidc-config.js";
import { createMongoOidcKeyRepository } from "./oidc/oidc-key-repository.js";
import { createOidc } from "./oidc/oidc-service.js";
import { clusterPipelinesFrom } from "./rpc/cluster-pipelines.js";
import { createMongoSecretRepository } from "./secrets/secret-repository.js";
import { readSecretsConfig } from "./secrets/secrets-config.js";
import { createSecrets } from "./secrets/secrets-service.js";
import { createMongoAgentRepository } from "./store/agent-repository.js";
import { createMongoClusterRepository } from "./store/cluster-repository.js";
import { createMongoMaintainerRepository } from "./store/maintainer-repository.js";
import { createMongoQueueRepository } from "./store/queue-repository.js";

/** How often sightings are written, silent agents looked for, and waiting jobs re-read. */
const FLUSH_MS = 3_000;
const SWEEP_MS = 5_000;
const HINTS_MS = 3_000;
/** How often the outbox relay looks for state events recorded but not published (events/agent-events.ts). */
const OUTBOX_RELAY_MS = 2_000;

void runService(
  {
    name: "agents",
    serviceNames: [AgentsService.typeName, SecretsService.typeName, OidcService.typeName],
    async setup({ db, nats, events, logger, env }) {
      const config = readAgentsConfig(env);
      const [clusters, agents, queues, maintainers, outboxStore] = await Promise.all([
        createMongoClusterRepository(db),
        createMongoAgentRepository(db),
        createMongoQueueRepository(db),
        createMongoMaintainerRepository(db),
        createMongoOutboxStore(db.collection<OutboxDoc>("outbox")),
      ]);
      const builds = createServiceClient(BuildsService, config.buildsUrl);
      const domain = createAgentsDomain({
        clusters,
        queues,
        maintainers,
        agents,
        builds,
        events,
        logger,
        config,
        outbox: { store: outboxStore, publish: jetStreamPublish(nats.js) },
        pipelinesOf: clusterPipelinesFrom(config.pipelinesUrl),
      });
      const secrets = createSecrets({
        secrets: await createMongoSecretRepository(db),
        clusters,
        builds,
        config: readSecretsConfig(env),
        logger,
      });
      secrets.start();
      const oidc = createOidc({
        keys: createMongoOidcKeyRepository(db),
        builds,
        clusters,
        config: readOidcConfig(env),
        logger,
      });
      await oidc.start();
      followEvents(nats, domain, logger);
      repeat(domain.flushLiveness, { what: "liveness flush", everyMs: FLUSH_MS, logger });
      repeat(domain.sweepLost, { what: "lost agent sweep", everyMs: SWEEP_MS, logger });
      repeat(domain.relayOutbox, { what: "outbox relay", everyMs: OUTBOX_RELAY_MS, costFactor: 3, logger });
      // A refresh reads every queued job: with thousands queued it is paced by its cost (events keep hints current).
      repeat(domain.refreshHints, { what: "dispatch hints refresh", everyMs: HINTS_MS, costFactor: 10, logger });
      void domain.refreshHints().catch((err) => logger.warn({ err }, "dispatch hints not loaded yet"));
      return (router) =>
        router
          .service(AgentsService, domain.service)
          .service(SecretsService, secrets.service)
          .service(OidcService, oidc.service);
    },
  },
  process.env,
);
