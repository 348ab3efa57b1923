import { PipelinesService } from "@conveyor/proto/pipelines";
import { runService } from "@conveyor/runtime";
import { createMongoPipelinesRepository } from "./pipelines-repository.js";
import { createPipelinesService } from "./pipelines-service.js";

void runService(
  {
    name: "pipelines",
    serviceNames: [PipelinesService.typeName],
    async setup({ db }) {
      const service = createPipelinesService({ repo: await createMongoPipelinesRepository(db) });
      return (router) => router.service(PipelinesService, service);
    },
  },
  process.env,
);
