/**
 * The four Connect services of the identity process, each assembled from its RPC groups (rpc/): identity (users,
 * organizations, access tokens, and people's sign-in: passwords, sign-in links, sessions), teams, rules and
 * registries.
 */

import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { IdentityService, RegistriesService, RulesService, TeamsService } from "@conveyor/proto/identity";
import type { EventPublisher, KeyedLock } from "@conveyor/runtime";
import { createAccessTokenRpcs } from "./rpc/access-tokens-rpc.js";
import { createOrganizationRpcs } from "./rpc/organizations-rpc.js";
import { createPasswordRpcs } from "./rpc/passwords-rpc.js";
import { createPipelineAccessRpcs } from "./rpc/pipeline-access-rpc.js";
import { createRegistryRpcs } from "./rpc/registries-rpc.js";
import { createRuleRpcs } from "./rpc/rules-rpc.js";
import { createSessionRpcs } from "./rpc/sessions-rpc.js";
import { createSignInContext, DEFAULT_SIGN_IN_SETTINGS, type SignInSettings } from "./rpc/sign-in-context.js";
import { createSignInRpcs } from "./rpc/sign-in-rpc.js";
import { createTeamMemberRpcs } from "./rpc/team-members-rpc.js";
import { createTeamPipelineRpcs } from "./rpc/team-pipelines-rpc.js";
import { createTeamSuiteRpcs } from "./rpc/team-suites-rpc.js";
import { createTeamsContext } from "./rpc/teams-context.js";
import { createTeamRpcs } from "./rpc/teams-rpc.js";
import { createUserRpcs } from "./rpc/users-rpc.js";
import type { IdentityRepository } from "./store/identity-repository.js";
import type { PasswordRepository } from "./store/password-repository.js";
import type { RegistryRepository } from "./store/registry-repository.js";
import type { RuleRepository } from "./store/rule-repository.js";
import type { SessionRepository } from "./store/session-repository.js";
import type { SignInFailureRepository } from "./store/sign-in-failure-repository.js";
import type { TeamRepository } from "./store/team-repository.js";

/** What the identity process's services are made of. */
export interface IdentityServicesDeps {
  identity: IdentityRepository;
  teams: TeamRepository;
  rules: RuleRepository;
  registries: RegistryRepository;
  sessions: SessionRepository;
  passwords: PasswordRepository;
  signInFailures: SignInFailureRepository;
  events: EventPublisher;
  /** Session lifetimes, failed sign-in limits and the password hash cost; the defaults when absent. */
  signIn?: SignInSettings;
  /**
   * Serializes a team's read-check-write sections (the last-maintainer rule). A process-local keyed lock when
   * absent; main.ts gives a lease lock in MongoDB, so that the rule holds across replicas.
   */
  lock?: KeyedLock;
  now?: () => Date;
}

/** The identity process's services. */
export interface IdentityServices {
  identity: ServiceImpl<typeof IdentityService>;
  teams: ServiceImpl<typeof TeamsService>;
  rules: ServiceImpl<typeof RulesService>;
  registries: ServiceImpl<typeof RegistriesService>;
}

/** Assembles the four services from their RPC groups. */
export function createIdentityServices(deps: IdentityServicesDeps): IdentityServices {
  const now = deps.now ?? (() => new Date());
  const { identity, teams, rules, registries, events } = deps;
  const identityContext = { repo: identity, events, now };
  const signInContext = createSignInContext({
    repo: identity,
    sessions: deps.sessions,
    passwords: deps.passwords,
    failures: deps.signInFailures,
    events,
    now,
    settings: deps.signIn ?? DEFAULT_SIGN_IN_SETTINGS,
  });
  const teamsContext = createTeamsContext({ identity, teams, now, ...(deps.lock ? { lock: deps.lock } : {}) });
  return {
    identity: {
      ...createUserRpcs(identityContext),
      ...createOrganizationRpcs(identityContext),
      ...createAccessTokenRpcs(identityContext),
      ...createPasswordRpcs(signInContext),
      ...createSignInRpcs(signInContext),
      ...createSessionRpcs(signInContext),
    },
    teams: {
      ...createTeamRpcs(teamsContext),
      ...createTeamSuiteRpcs(teamsContext),
      ...createTeamMemberRpcs(teamsContext),
      ...createTeamPipelineRpcs(teamsContext),
      ...createPipelineAccessRpcs(teamsContext),
    },
    rules: createRuleRpcs({ identity, rules, now }),
    registries: createRegistryRpcs({ identity, registries, now }),
  };
}

/** The names of the services `routeIdentityServices` serves, for health checks. */
export const IDENTITY_SERVICE_NAMES = [
  IdentityService.typeName,
  TeamsService.typeName,
  RulesService.typeName,
  RegistriesService.typeName,
];

/** Serves the four services on a Connect router. */
export function routeIdentityServices(router: ConnectRouter, services: IdentityServices): ConnectRouter {
  return router
    .service(IdentityService, services.identity)
    .service(TeamsService, services.teams)
    .service(RulesService, services.rules)
    .service(RegistriesService, services.registries);
}
