// In-memory wiring of every service of the identity process, for the unit tests of the team, rule and registry services.
import { type Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { IdentityService, RegistriesService, Role, RulesService, TeamsService } from "@conveyor/proto/identity";
import type { EventPublisher } from "@conveyor/runtime";
import { PASSWORD_COST, type ScryptCost } from "./domain/password.js";
import { createIdentityServices, routeIdentityServices } from "./identity-service.js";
import { DEFAULT_SIGN_IN_SETTINGS } from "./rpc/sign-in-context.js";
import { createMemoryIdentityRepository } from "./store/memory-identity-repository.js";
import { createMemoryPasswordRepository } from "./store/memory-password-repository.js";
import { createMemoryRegistryRepository } from "./store/memory-registry-repository.js";
import { createMemoryRuleRepository } from "./store/memory-rule-repository.js";
import { createMemorySessionRepository } from "./store/memory-session-repository.js";
import { createMemorySignInFailureRepository } from "./store/memory-sign-in-failure-repository.js";
import { createMemoryTeamRepository } from "./store/memory-team-repository.js";

const events: EventPublisher = { async publish() {} };

/** Every service of the identity process over one set of in-memory repositories. */
export function setup() {
  const identity = createMemoryIdentityRepository();
  const registryRepo = createMemoryRegistryRepository();
  let clock = Date.parse("2026-03-01T00:00:00.000Z");
  const now = () => {
    clock += 1000;
    return new Date(clock);
  };
  const services = createIdentityServices({
    identity,
    teams: createMemoryTeamRepository(),
    rules: createMemoryRuleRepository(),
    registries: registryRepo,
    sessions: createMemorySessionRepository(),
    passwords: createMemoryPasswordRepository(),
    signInFailures: createMemorySignInFailureRepository(),
    events,
    now,
  });
  const transport = createRouterTransport((router) => routeIdentityServices(router, services));
  return {
    ids: createClient(IdentityService, transport),
    teams: createClient(TeamsService, transport),
    rules: createClient(RulesService, transport),
    registries: createClient(RegistriesService, transport),
    registryRepo,
  };
}

/** The code, message and error a call fails with; empty when it succeeds. */
export async function failure(
  promise: Promise<unknown>,
): Promise<{ code?: Code; message?: string; err?: ConnectError }> {
  try {
    await promise;
    return {};
  } catch (e) {
    const err = ConnectError.from(e);
    return { code: err.code, message: err.rawMessage, err };
  }
}

/** An organization with an admin, two members and a stranger from another organization. */
export async function world(teamsEnabled = true) {
  const s = setup();
  const { organization } = await s.ids.createOrganization({ name: "Acme", teamsEnabled });
  const { organization: other } = await s.ids.createOrganization({ name: "Other" });
  const orgId = organization?.id ?? "";
  const user = async (name: string, org: string, role: Role) => {
    const { user: u } = await s.ids.createUser({ name, email: `${name}@example.com` });
    await s.ids.addMember({ organization: org, userId: u?.id ?? "", role });
    return u?.id ?? "";
  };
  const admin = await user("Ada", orgId, Role.ADMIN);
  const mia = await user("Mia", orgId, Role.MEMBER);
  const max = await user("Max", orgId, Role.MEMBER);
  const stranger = await user("Sam", other?.id ?? "", Role.MEMBER);
  const { team } = await s.teams.createTeam({ organization: organization?.slug ?? "", name: "Web Team" });
  return { ...s, orgId, otherId: other?.id ?? "", admin, mia, max, stranger, teamId: team?.id ?? "" };
}

/** A cheap scrypt cost for tests that sign in many times; tests of the cost itself use the real one. */
export const CHEAP_PASSWORD_COST: ScryptCost = { N: 2 ** 10, r: 8, p: 1 };

/**
 * The identity service for sign-in tests: a clock the test moves, the events it published (subject and message),
 * the session repository's writes of a session's last use counted, and an organization "acme".
 */
export async function signInSetup(opts: { realCost?: boolean } = {}) {
  let clock = Date.parse("2026-03-01T10:00:00.000Z");
  const published: Array<{ subject: string; message: Record<string, unknown> }> = [];
  const recorder: EventPublisher = {
    async publish(subject, _schema, message) {
      published.push({ subject, message: message as Record<string, unknown> });
    },
  };
  const sessions = createMemorySessionRepository();
  let touches = 0;
  const touchSession = sessions.touchSession;
  sessions.touchSession = (...args) => {
    touches += 1;
    return touchSession(...args);
  };
  const services = createIdentityServices({
    identity: createMemoryIdentityRepository(),
    teams: createMemoryTeamRepository(),
    rules: createMemoryRuleRepository(),
    registries: createMemoryRegistryRepository(),
    sessions,
    passwords: createMemoryPasswordRepository(),
    signInFailures: createMemorySignInFailureRepository(),
    events: recorder,
    now: () => new Date(clock),
    signIn: { ...DEFAULT_SIGN_IN_SETTINGS, passwordCost: opts.realCost ? PASSWORD_COST : CHEAP_PASSWORD_COST },
  });
  const ids = createClient(
    IdentityService,
    createRouterTransport((router) => routeIdentityServices(router, services)),
  );
  const { organization } = await ids.createOrganization({ name: "Acme" });
  /** A user, member of acme with the role, with a password unless none is given. */
  const user = async (name: string, password?: string, role = Role.MEMBER) => {
    const { user: u } = await ids.createUser({ name, email: `${name.toLowerCase()}@example.com` });
    const id = u?.id ?? "";
    await ids.addMember({ organization: organization?.id ?? "", userId: id, role });
    if (password !== undefined) await ids.setPassword({ userId: id, password });
    return { id, email: u?.email ?? "" };
  };
  return {
    ids,
    orgId: organization?.id ?? "",
    user,
    published,
    touches: () => touches,
    advance(ms: number) {
      clock += ms;
    },
    now: () => new Date(clock),
  };
}
