// In-memory wiring of every service of the identity process, for the unit tests of the team, rule and registry services.
import { type Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { IdentityService, RegistriesService, Role, RulesService, TeamsService } from "@conveyor/proto/identity";
import type { EventPublisher } from "@conveyor/runtime";
import { createIdentityServices, routeIdentityServices } from "./identity-service.js";
import { createMemoryIdentityRepository } from "./store/memory-identity-repository.js";
import { createMemoryRegistryRepository } from "./store/memory-registry-repository.js";
import { createMemoryRuleRepository } from "./store/memory-rule-repository.js";
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
