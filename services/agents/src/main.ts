import { AgentsService } from "@conveyor/proto/agents";
import { runService } from "@conveyor/runtime";
import { createMongoAgentsRepository } from "./agents-repository.js";
import { createAgentsService } from "./agents-service.js";

void runService(
  {
    name: "agents",
    serviceNames: [AgentsService.typeName],
    async setup({ db }) {
      const service = createAgentsService({ repo: await createMongoAgentsRepository(db) });
      return (router) => router.service(AgentsService, service);
    },
  },
  process.env,
);
