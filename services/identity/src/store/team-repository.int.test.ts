import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { DuplicateError } from "./identity-repository.js";
import { createMongoRegistryRepository, type RegistryRepository } from "./registry-repository.js";
import { createMongoRuleRepository, type RuleRepository } from "./rule-repository.js";
import { createMongoTeamRepository, type TeamRepository } from "./team-repository.js";

// Runs against the stack's real MongoDB-wire server (FerretDB or mongod), in a throwaway database: the unique
// indexes are the invariants of teams, associations, rules, registries and registry tokens.
const url = process.env.MONGODB_URL ?? "";
const dbName = `it_identity_teams_${Date.now()}`;
let client: MongoClient;
let teams: TeamRepository;
let rules: RuleRepository;
let registries: RegistryRepository;

beforeAll(async () => {
  client = await new MongoClient(url).connect();
  const db = client.db(dbName);
  [teams, rules, registries] = await Promise.all([
    createMongoTeamRepository(db),
    createMongoRuleRepository(db),
    createMongoRegistryRepository(db),
  ]);
});

afterAll(async () => {
  await client.db(dbName).dropDatabase();
  await client.close();
});

const now = () => new Date();

describe("MongoDB team, rule and registry repositories", () => {
  it("keeps team slugs unique per organization and each user, pipeline and suite once per team", async () => {
    const [org, otherOrg] = [randomUUID(), randomUUID()];
    const team = {
      _id: randomUUID(),
      organizationId: org,
      slug: "web",
      name: "Web",
      description: "",
      privacy: "visible" as const,
      createdAt: now(),
    };
    await teams.insertTeam(team);
    await expect(teams.insertTeam({ ...team, _id: randomUUID() })).rejects.toBeInstanceOf(DuplicateError);
    await teams.insertTeam({ ...team, _id: randomUUID(), organizationId: otherOrg });

    const member = {
      _id: randomUUID(),
      teamId: team._id,
      organizationId: org,
      userId: randomUUID(),
      userName: "Ann",
      role: "maintainer" as const,
      createdAt: now(),
    };
    await teams.insertMember(member);
    await expect(teams.insertMember({ ...member, _id: randomUUID(), role: "member" })).rejects.toBeInstanceOf(
      DuplicateError,
    );
    expect(await teams.countMaintainers(team._id)).toBe(1);
    expect((await teams.setMemberRole(team._id, member.userId, "member"))?.role).toBe("member");
    expect(await teams.countMaintainers(team._id)).toBe(0);
    expect((await teams.membershipsOfUser([org], member.userId)).map((m) => m.teamId)).toEqual([team._id]);

    const link = {
      _id: randomUUID(),
      teamId: team._id,
      organizationId: org,
      pipelineId: randomUUID(),
      accessLevel: "read_only" as const,
      createdAt: now(),
    };
    await teams.insertTeamPipeline(link);
    await expect(teams.insertTeamPipeline({ ...link, _id: randomUUID() })).rejects.toBeInstanceOf(DuplicateError);
    expect((await teams.setTeamPipelineLevel(team._id, link.pipelineId, "build_and_read"))?.accessLevel).toBe(
      "build_and_read",
    );
    expect((await teams.pipelinesOfTeams([team._id], [link.pipelineId])).length).toBe(1);
    const only = async (ids?: string[]) => {
      const page = await teams.listTeamPipelines(team._id, 0, 10, ids);
      return [page.items.map((l) => l.pipelineId), page.total];
    };
    expect(await only()).toEqual([[link.pipelineId], 1]);
    expect(await only([link.pipelineId, randomUUID()])).toEqual([[link.pipelineId], 1]);
    expect(await only([randomUUID()])).toEqual([[], 0]);
    expect(await only([])).toEqual([[], 0]);
    await teams.removePipelineEverywhere(link.pipelineId);
    expect((await teams.listTeamPipelines(team._id, 0, 10)).total).toBe(0);

    const suite = {
      _id: randomUUID(),
      teamId: team._id,
      organizationId: org,
      suiteId: randomUUID(),
      accessLevels: ["read" as const],
      createdAt: now(),
    };
    await teams.insertTeamSuite(suite);
    await expect(teams.insertTeamSuite({ ...suite, _id: randomUUID() })).rejects.toBeInstanceOf(DuplicateError);
  });

  it("lists teams by name with secret ones only as allowed, renames under the slug rule, and deletes with links", async () => {
    const org = randomUUID();
    const mk = (name: string, privacy: "visible" | "secret") => ({
      _id: randomUUID(),
      organizationId: org,
      slug: name.toLowerCase(),
      name,
      description: "",
      privacy,
      createdAt: now(),
    });
    const [beta, alpha, hush] = [mk("Beta", "visible"), mk("Alpha", "visible"), mk("Hush", "secret")];
    for (const t of [beta, alpha, hush]) await teams.insertTeam(t);
    const names = async (filter: Parameters<TeamRepository["listTeams"]>[1], skip = 0, limit = 10) => {
      const page = await teams.listTeams(org, filter, skip, limit);
      return [page.items.map((t) => t.name), page.total];
    };
    expect(await names({ secretIds: "all" })).toEqual([["Alpha", "Beta", "Hush"], 3]);
    expect(await names({ secretIds: [] })).toEqual([["Alpha", "Beta"], 2]);
    expect(await names({ secretIds: [hush._id] })).toEqual([["Alpha", "Beta", "Hush"], 3]);
    expect(await names({ secretIds: [], ids: [hush._id, beta._id] })).toEqual([["Beta"], 1]);
    expect(await names({ secretIds: "all" }, 1, 1)).toEqual([["Beta"], 3]);

    const renamed = await teams.updateTeam(org, beta._id, {
      name: "Gamma",
      slug: "gamma",
      membersCanCreatePipelines: false,
    });
    expect(renamed).toMatchObject({
      name: "Gamma",
      slug: "gamma",
      membersCanCreatePipelines: false,
      privacy: "visible",
    });
    await expect(teams.updateTeam(org, beta._id, { slug: "alpha" })).rejects.toBeInstanceOf(DuplicateError);
    expect(await teams.updateTeam(randomUUID(), beta._id, { description: "x" })).toBeNull();

    const at = now();
    await teams.insertMember({
      _id: randomUUID(),
      teamId: hush._id,
      organizationId: org,
      userId: "u",
      userName: "U",
      role: "maintainer",
      createdAt: at,
    });
    await teams.insertTeamPipeline({
      _id: randomUUID(),
      teamId: hush._id,
      organizationId: org,
      pipelineId: "p",
      accessLevel: "read_only",
      createdAt: at,
    });
    expect(await teams.deleteTeam(randomUUID(), hush._id)).toBe(false);
    expect(await teams.deleteTeam(org, hush._id)).toBe(true);
    expect(await teams.findTeam(org, hush._id)).toBeNull();
    expect(await teams.findMember(hush._id, "u")).toBeNull();
    expect(await teams.findTeamPipeline(hush._id, "p")).toBeNull();
    expect(await teams.deleteTeam(org, hush._id)).toBe(false);
  });

  it("keeps rules unique per organization, type, source and target, and drops those of a deleted pipeline", async () => {
    const org = randomUUID();
    const [a, b] = [randomUUID(), randomUUID()];
    const rule = {
      _id: randomUUID(),
      organizationId: org,
      type: "pipeline.trigger_build.pipeline",
      sourceType: "pipeline",
      sourceId: a,
      action: "trigger_build",
      targetType: "pipeline",
      targetId: b,
      effect: "allow" as const,
      conditions: [],
      createdAt: now(),
      createdBy: "",
    };
    await rules.insertRule(rule);
    await expect(rules.insertRule({ ...rule, _id: randomUUID() })).rejects.toBeInstanceOf(DuplicateError);
    await rules.insertRule({ ...rule, _id: randomUUID(), type: "pipeline.artifacts_read.pipeline" });
    await rules.insertRule({ ...rule, _id: randomUUID(), sourceId: b, targetId: a });
    expect((await rules.listRules(org, 0, 10)).total).toBe(3);
    await rules.removeRulesOf(a);
    expect((await rules.listRules(org, 0, 10)).total).toBe(0);
  });

  it("keeps registry slugs unique per organization and token hashes unique", async () => {
    const org = randomUUID();
    const registry = {
      _id: randomUUID(),
      organizationId: org,
      slug: "npm",
      name: "npm",
      ecosystem: "",
      createdAt: now(),
    };
    await registries.insertRegistry(registry);
    await expect(registries.insertRegistry({ ...registry, _id: randomUUID() })).rejects.toBeInstanceOf(DuplicateError);
    const token = {
      _id: randomUUID(),
      organizationId: org,
      registryId: registry._id,
      hash: randomUUID(),
      description: "d",
      createdAt: now(),
      createdBy: "",
    };
    await registries.insertToken(token);
    await expect(registries.insertToken({ ...token, _id: randomUUID() })).rejects.toBeInstanceOf(DuplicateError);
    expect((await registries.findRegistry(org, { slug: "npm" }))?._id).toBe(registry._id);
    expect(await registries.findRegistry(randomUUID(), { slug: "npm" })).toBeNull();
  });
});
