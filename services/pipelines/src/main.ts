import { AgentsService } from "@conveyor/proto/agents";
import { BuildsService } from "@conveyor/proto/builds";
import { PipelinesService } from "@conveyor/proto/pipelines";
import {
  createMongoOutboxStore,
  createServiceClient,
  jetStreamPublish,
  type OutboxDoc,
  openFences,
  repeat,
  runService,
} from "@conveyor/runtime";
import { readPipelinesConfig } from "./config.js";
import { consumePipelineCounts } from "./events/counts-consumer.js";
import { createPipelinesOutbox } from "./events/deletion-outbox.js";
import { createPipelinesService } from "./pipelines-service.js";
import { createScheduleTicker } from "./schedules/schedule-ticker.js";
import { createMongoPipelinesRepository } from "./store/pipelines-repository.js";
import { createMongoScheduleRepository } from "./store/schedule-repository.js";

/** How often the outbox relay looks for deletion events that were not published. */
const OUTBOX_RELAY_MS = 2_000;

void runService(
  {
    name: "pipelines",
    serviceNames: [PipelinesService.typeName],
    async setup({ db, events, env, nats, logger }) {
      const config = readPipelinesConfig(env);
      const repo = await createMongoPipelinesRepository(db);
      const outbox = createPipelinesOutbox({
        repo,
        store: await createMongoOutboxStore(db.collection<OutboxDoc>("outbox")),
        publish: jetStreamPublish(nats.js),
        logger,
      });
      outbox.start(OUTBOX_RELAY_MS);
      await consumePipelineCounts(nats, repo, logger);
      const schedules = await createMongoScheduleRepository(db);
      // Every replica ticks: a tick's unique claim makes exactly one of them build it.
      const ticker = createScheduleTicker({
        schedules,
        pipelines: repo,
        builds: createServiceClient(BuildsService, config.buildsUrl),
        logger,
      });
      repeat(
        async () => {
          const pass = await ticker.pass();
          if (pass.built + pass.failed > 0) logger.info(pass, "schedule ticks handled");
        },
        { what: "schedule ticker", everyMs: config.scheduleTickMs, logger },
      );
      const service = createPipelinesService({
        repo,
        schedules,
        events,
        outbox,
        clusters: createServiceClient(AgentsService, config.agentsUrl),
        fences: await openFences(nats.nc),
      });
      return (router) => router.service(PipelinesService, service);
    },
  },
  process.env,
);
