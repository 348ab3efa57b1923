import { IdentityService, RegistriesService, RulesService, TeamsService } from "@conveyor/proto/identity";
import { createLeaseLock, type LeaseDoc, runService } from "@conveyor/runtime";
import { createMongoIdentityRepository } from "./identity-repository.js";
import { createIdentityService } from "./identity-service.js";
import { consumePipelineDeletions } from "./pipeline-deletions.js";
import { createRegistriesService } from "./registries-service.js";
import { createMongoRegistryRepository } from "./registry-repository.js";
import { createMongoRuleRepository } from "./rule-repository.js";
import { createRulesService } from "./rules-service.js";
import { createMongoTeamRepository } from "./team-repository.js";
import { createTeamsService } from "./teams-service.js";

void runService(
  {
    name: "identity",
    serviceNames: [IdentityService.typeName, TeamsService.typeName, RulesService.typeName, RegistriesService.typeName],
    async setup({ db, events, nats, logger }) {
      const identity = await createMongoIdentityRepository(db);
      const teams = await createMongoTeamRepository(db);
      const rules = await createMongoRuleRepository(db);
      const registries = await createMongoRegistryRepository(db);
      await consumePipelineDeletions(nats, { teams, rules }, logger);
      const services = {
        identity: createIdentityService({ repo: identity, events }),
        // The last-maintainer rule reads several member documents: a lease in MongoDB holds it across replicas.
        teams: createTeamsService({ identity, teams, lock: createLeaseLock(db.collection<LeaseDoc>("locks")) }),
        rules: createRulesService({ identity, rules }),
        registries: createRegistriesService({ identity, registries }),
      };
      return (router) =>
        router
          .service(IdentityService, services.identity)
          .service(TeamsService, services.teams)
          .service(RulesService, services.rules)
          .service(RegistriesService, services.registries);
    },
  },
  process.env,
);
