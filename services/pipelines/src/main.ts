import { AgentsService } from "@conveyor/proto/agents";
import { PipelinesService } from "@conveyor/proto/pipelines";
import { createServiceClient, runService } from "@conveyor/runtime";
import { readPipelinesConfig } from "./config.js";
import { createMongoPipelinesRepository } from "./pipelines-repository.js";
import { createPipelinesService } from "./pipelines-service.js";

void runService(
  {
    name: "pipelines",
    serviceNames: [PipelinesService.typeName],
    async setup({ db, events, env }) {
      const config = readPipelinesConfig(env);
      const service = createPipelinesService({
        repo: await createMongoPipelinesRepository(db),
        events,
        clusters: createServiceClient(AgentsService, config.agentsUrl),
      });
      return (router) => router.service(PipelinesService, service);
    },
  },
  process.env,
);
