import { IdentityService } from "@conveyor/proto/identity";
import { runService } from "@conveyor/runtime";
import { createMongoIdentityRepository } from "./identity-repository.js";
import { createIdentityService } from "./identity-service.js";

void runService(
  {
    name: "identity",
    serviceNames: [IdentityService.typeName],
    async setup({ db, events }) {
      const repo = await createMongoIdentityRepository(db);
      const service = createIdentityService({ repo, events });
      return (router) => router.service(IdentityService, service);
    },
  },
  process.env,
);
