import { AgentsService } from "@conveyor/proto/agents";
import { PipelinesService } from "@conveyor/proto/pipelines";
import { createServiceClient, runService } from "@conveyor/runtime";
import { readPipelinesConfig } from "./config.js";
import { consumePipelineCounts } from "./counts-consumer.js";
import { createMongoPipelinesRepository } from "./pipelines-repository.js";
import { createPipelinesService } from "./pipelines-service.js";

void runService(
  {
    name: "pipelines",
    serviceNames: [PipelinesService.typeName],
    async setup({ db, events, env, nats, logger }) {
      const config = readPipelinesConfig(env);
      const repo = await createMongoPipelinesRepository(db);
      await consumePipelineCounts(nats, repo, logger);
      const service = createPipelinesService({
        repo,
        events,
        clusters: createServiceClient(AgentsService, config.agentsUrl),
      });
      return (router) => router.service(PipelinesService, service);
    },
  },
  process.env,
);
