import { createLeaseLock, type LeaseDoc, runService } from "@conveyor/runtime";
import { readIdentityConfig } from "./config.js";
import { consumePipelineDeletions } from "./events/pipeline-deletions-consumer.js";
import { createIdentityServices, IDENTITY_SERVICE_NAMES, routeIdentityServices } from "./identity-service.js";
import { createMongoIdentityRepository } from "./store/identity-repository.js";
import { createMongoPasswordRepository } from "./store/password-repository.js";
import { createMongoRegistryRepository } from "./store/registry-repository.js";
import { createMongoRuleRepository } from "./store/rule-repository.js";
import { createMongoSessionRepository } from "./store/session-repository.js";
import { createMongoSignInFailureRepository } from "./store/sign-in-failure-repository.js";
import { createMongoTeamRepository } from "./store/team-repository.js";

void runService(
  {
    name: "identity",
    serviceNames: IDENTITY_SERVICE_NAMES,
    async setup({ db, events, nats, logger, env }) {
      const config = readIdentityConfig(env);
      const identity = await createMongoIdentityRepository(db);
      const teams = await createMongoTeamRepository(db);
      const rules = await createMongoRuleRepository(db);
      const registries = await createMongoRegistryRepository(db);
      const sessions = await createMongoSessionRepository(db);
      const signInFailures = await createMongoSignInFailureRepository(db);
      await consumePipelineDeletions(nats, { teams, rules }, logger);
      const services = createIdentityServices({
        identity,
        teams,
        rules,
        registries,
        sessions,
        passwords: createMongoPasswordRepository(db),
        signInFailures,
        signIn: config.signIn,
        events,
        // The last-maintainer rule reads several member documents: a lease in MongoDB holds it across replicas.
        lock: createLeaseLock(db.collection<LeaseDoc>("locks")),
      });
      return (router) => routeIdentityServices(router, services);
    },
  },
  process.env,
);
