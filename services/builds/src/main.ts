import { BuildsService } from "@conveyor/proto/builds";
import { runService } from "@conveyor/runtime";
import { createMongoBuildRepository } from "./build-repository.js";
import { createBuildService } from "./build-service.js";

void runService(
  {
    name: "builds",
    serviceNames: [BuildsService.typeName],
    async setup({ db, events, logger }) {
      const service = createBuildService({ repo: await createMongoBuildRepository(db), events, logger });
      return (router) => router.service(BuildsService, service);
    },
  },
  process.env,
);
