import { AnnotationsService } from "@conveyor/proto/annotations";
import { BuildsService } from "@conveyor/proto/builds";
import { jetStreamPublish, runService } from "@conveyor/runtime";
import { startBuildsProcess } from "./builds-process.js";

void runService(
  {
    name: "builds",
    serviceNames: [BuildsService.typeName, AnnotationsService.typeName],
    async setup({ db, events, nats, logger, env }) {
      const services = await startBuildsProcess({
        db,
        events,
        publish: jetStreamPublish(nats.js),
        nats,
        logger,
        env,
      });
      return (router) =>
        router.service(BuildsService, services.builds).service(AnnotationsService, services.annotations);
    },
  },
  process.env,
);
