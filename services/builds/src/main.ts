import { BuildsService } from "@conveyor/proto/builds";
import { runService } from "@conveyor/runtime";
import { createMongoBuildsRepository } from "./builds-repository.js";
import { createBuildsService } from "./builds-service.js";

void runService(
  {
    name: "builds",
    serviceNames: [BuildsService.typeName],
    async setup({ db }) {
      const service = createBuildsService({ repo: await createMongoBuildsRepository(db) });
      return (router) => router.service(BuildsService, service);
    },
  },
  process.env,
);
