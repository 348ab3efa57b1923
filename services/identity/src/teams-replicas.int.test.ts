import { createClient, createRouterTransport } from "@connectrpc/connect";
import { IdentityService, Role, TeamMemberRole, TeamsService } from "@conveyor/proto/identity";
import { createLeaseLock, type LeaseDoc } from "@conveyor/runtime";
import { type Db, MongoClient } from "mongodb";
import { createIdentityServices, routeIdentityServices } from "./identity-service.js";
import { createMongoIdentityRepository } from "./store/identity-repository.js";
import { createMongoPasswordRepository } from "./store/password-repository.js";
import { createMongoRegistryRepository } from "./store/registry-repository.js";
import { createMongoRuleRepository } from "./store/rule-repository.js";
import { createMongoSessionRepository } from "./store/session-repository.js";
import { createMongoSignInFailureRepository } from "./store/sign-in-failure-repository.js";
import { createMongoTeamRepository } from "./store/team-repository.js";

// The last-maintainer rule with two replicas of the identity service on one database (CONVEYOR_REPLICAS,
// Kubernetes): each replica has its own process-local locks, so only the lease lock in MongoDB can hold the rule
// when both demote or remove a team's two maintainers at the same moment.
let mongo: MongoClient;
let db: Db;
const events = { async publish() {} };

async function replica() {
  const services = createIdentityServices({
    identity: await createMongoIdentityRepository(db),
    teams: await createMongoTeamRepository(db),
    rules: await createMongoRuleRepository(db),
    registries: await createMongoRegistryRepository(db),
    sessions: await createMongoSessionRepository(db),
    passwords: createMongoPasswordRepository(db),
    signInFailures: await createMongoSignInFailureRepository(db),
    events,
    lock: createLeaseLock(db.collection<LeaseDoc>("locks")),
  });
  const transport = createRouterTransport((router) => routeIdentityServices(router, services));
  return { ids: createClient(IdentityService, transport), teams: createClient(TeamsService, transport) };
}

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  db = mongo.db(`it_teams_replicas_${Date.now()}`);
});
afterAll(async () => {
  await db.dropDatabase();
  await mongo.close();
});

describe("teams on two identity replicas", () => {
  it("keeps one maintainer when both replicas demote or remove a team's two maintainers at once", async () => {
    const [a, b] = [await replica(), await replica()];
    const { organization } = await a.ids.createOrganization({ name: `Acme ${Date.now()}`, teamsEnabled: true });
    const orgId = organization?.id ?? "";
    const user = async (name: string, role: Role) => {
      const { user: u } = await a.ids.createUser({ name, email: `${name}-${Date.now()}@example.com` });
      await a.ids.addMember({ organization: orgId, userId: u?.id ?? "", role });
      return u?.id ?? "";
    };
    const admin = await user("Ada", Role.ADMIN);
    for (let round = 0; round < 6; round++) {
      const { team } = await a.teams.createTeam({ organization: organization?.slug ?? "", name: `Web ${round}` });
      const base = { organizationId: orgId, actorId: admin, teamId: team?.id ?? "" };
      const mia = await user(`Mia${round}`, Role.MEMBER);
      const max = await user(`Max${round}`, Role.MEMBER);
      await a.teams.addTeamMember({ ...base, userId: mia, role: TeamMemberRole.MAINTAINER });
      await a.teams.addTeamMember({ ...base, userId: max, role: TeamMemberRole.MAINTAINER });
      // Even rounds demote both at once, odd rounds remove both at once, each through another replica.
      const results = await Promise.allSettled(
        round % 2 === 0
          ? [
              a.teams.updateTeamMember({ ...base, userId: mia, role: TeamMemberRole.MEMBER }),
              b.teams.updateTeamMember({ ...base, userId: max, role: TeamMemberRole.MEMBER }),
            ]
          : [a.teams.removeTeamMember({ ...base, userId: mia }), b.teams.removeTeamMember({ ...base, userId: max })],
      );
      expect([round, results.filter((r) => r.status === "fulfilled").length]).toEqual([round, 1]);
      const { members } = await b.teams.listTeamMembers(base);
      expect([round, members.filter((m) => m.role === TeamMemberRole.MAINTAINER).length]).toEqual([round, 1]);
    }
    expect(await db.collection("locks").countDocuments({})).toBe(0);
  });
});
