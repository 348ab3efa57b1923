import { BuildsService } from "@conveyor/proto/builds";
import { runService } from "@conveyor/runtime";
import { createMongoBuildRepository } from "./build-repository.js";
import { createBuildDomain } from "./build-service.js";

/** How often the counters of recently active pipelines are re-announced. */
const COUNTS_REPUBLISH_MS = 30_000;

void runService(
  {
    name: "builds",
    serviceNames: [BuildsService.typeName],
    async setup({ db, events, logger }) {
      const domain = createBuildDomain({ repo: await createMongoBuildRepository(db), events, logger });
      setInterval(() => {
        domain.republishCounts().catch((err) => logger.warn({ err }, "counters republish failed"));
      }, COUNTS_REPUBLISH_MS).unref();
      return (router) => router.service(BuildsService, domain.service);
    },
  },
  process.env,
);
