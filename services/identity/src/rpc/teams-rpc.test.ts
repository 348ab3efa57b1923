import { Code, type ConnectError } from "@connectrpc/connect";
import { PipelineAccessLevel, SuiteAccessLevel, TeamMemberRole, TeamPrivacy } from "@conveyor/proto/identity";
import { fieldErrorsOf, newId } from "@conveyor/runtime";
import { failure, setup, world } from "../test-support.js";

describe("teams service", () => {
  it("creates teams with a slug, visible by default, and refuses a taken name", async () => {
    const w = await world();
    const { team } = await w.teams.getTeam({ organizationId: w.orgId, actorId: w.mia, teamId: w.teamId });
    expect(team).toMatchObject({ slug: "web-team", name: "Web Team", privacy: TeamPrivacy.VISIBLE });
    expect((await failure(w.teams.createTeam({ organization: w.orgId, name: "web team" }))).code).toBe(
      Code.AlreadyExists,
    );
    expect((await failure(w.teams.createTeam({ organization: w.orgId, name: " " }))).code).toBe(Code.InvalidArgument);
    expect((await failure(w.teams.getTeam({ organizationId: w.otherId, actorId: "", teamId: w.teamId }))).code).toBe(
      Code.NotFound,
    );
  });

  it("adds, lists, updates and removes members, with created_at always set", async () => {
    const w = await world();
    const base = { organizationId: w.orgId, actorId: w.admin, teamId: w.teamId };
    const added = await w.teams.addTeamMember({ ...base, userId: w.mia, role: TeamMemberRole.MAINTAINER });
    expect(added.member).toMatchObject({ role: TeamMemberRole.MAINTAINER, user: { id: w.mia, name: "Mia" } });
    expect(added.member?.createdAt).toBeDefined();
    await w.teams.addTeamMember({ ...base, userId: w.max, role: TeamMemberRole.MEMBER });
    const list = await w.teams.listTeamMembers({ ...base, perPage: 1 });
    expect(list.totalCount).toBe(2);
    expect(list.members.map((m) => m.user?.name)).toEqual(["Max"]);
    const updated = await w.teams.updateTeamMember({ ...base, userId: w.max, role: TeamMemberRole.MAINTAINER });
    expect(updated.member?.role).toBe(TeamMemberRole.MAINTAINER);
    await w.teams.removeTeamMember({ ...base, userId: w.max });
    expect((await failure(w.teams.getTeamMember({ ...base, userId: w.max }))).message).toBe("No team member found");
  });

  it("answers each invalid member with its reason, all at once", async () => {
    const w = await world();
    const base = { organizationId: w.orgId, actorId: w.admin, teamId: w.teamId };
    const cases: Array<[object, string]> = [
      [{ userId: w.mia }, "Validation failed: Role must be member or maintainer"],
      [{ userId: "", role: TeamMemberRole.MEMBER }, "Validation failed: User can't be blank"],
      [{ userId: newId(), role: TeamMemberRole.MEMBER }, "Validation failed: User could not be found"],
      [{ userId: w.stranger, role: TeamMemberRole.MEMBER }, "Validation failed: User could not be found"],
      [{ userId: "nope" }, "Validation failed: User could not be found, Role must be member or maintainer"],
    ];
    for (const [req, message] of cases) {
      const got = await failure(w.teams.addTeamMember({ ...base, ...req }));
      expect([req, got.code, got.message]).toEqual([req, Code.InvalidArgument, message]);
    }
    await w.teams.addTeamMember({ ...base, userId: w.mia, role: TeamMemberRole.MEMBER });
    expect(await failure(w.teams.addTeamMember({ ...base, userId: w.mia, role: TeamMemberRole.MEMBER }))).toMatchObject(
      {
        code: Code.AlreadyExists,
        message: "Validation failed: User is already a member of this team",
      },
    );
  });

  it("lists the teams of an organization a user belongs to, secret ones included, and none for strangers", async () => {
    const w = await world();
    const base = { organizationId: w.orgId, actorId: w.admin };
    const { team: secret } = await w.teams.createTeam({
      organization: w.orgId,
      name: "Release Managers",
      privacy: TeamPrivacy.SECRET,
    });
    await w.teams.addTeamMember({ ...base, teamId: w.teamId, userId: w.mia, role: TeamMemberRole.MEMBER });
    await w.teams.addTeamMember({ ...base, teamId: secret?.id ?? "", userId: w.mia, role: TeamMemberRole.MEMBER });
    await w.teams.addTeamMember({ ...base, teamId: w.teamId, userId: w.max, role: TeamMemberRole.MEMBER });
    const slugs = async (organizationId: string, userId: string) =>
      (await w.teams.listUserTeams({ organizationId, userId })).teams.map((t) => t.slug).sort();
    expect(await slugs(w.orgId, w.mia)).toEqual(["release-managers", "web-team"]);
    expect(await slugs(w.orgId, w.max)).toEqual(["web-team"]);
    expect(await slugs(w.orgId, w.admin)).toEqual([]);
    expect(await slugs(w.otherId, w.mia)).toEqual([]);
    expect(await slugs(w.orgId, "not-a-uuid")).toEqual([]);
    expect(await slugs("nope", w.mia)).toEqual([]);
  });

  it("refuses to demote or remove the last maintainer", async () => {
    const w = await world();
    const base = { organizationId: w.orgId, actorId: w.admin, teamId: w.teamId };
    await w.teams.addTeamMember({ ...base, userId: w.mia, role: TeamMemberRole.MAINTAINER });
    expect(
      await failure(w.teams.updateTeamMember({ ...base, userId: w.mia, role: TeamMemberRole.MEMBER })),
    ).toMatchObject({
      code: Code.InvalidArgument,
      message: "Validation failed: Role can't be changed: a team needs at least one maintainer",
    });
    expect(await failure(w.teams.removeTeamMember({ ...base, userId: w.mia }))).toMatchObject({
      code: Code.FailedPrecondition,
      message: "Team member could not be removed: a team needs at least one maintainer",
    });
    await w.teams.addTeamMember({ ...base, userId: w.max, role: TeamMemberRole.MAINTAINER });
    await w.teams.removeTeamMember({ ...base, userId: w.mia });
    expect((await w.teams.listTeamMembers(base)).members.map((m) => m.user?.id)).toEqual([w.max]);
  });

  it("lets maintainers manage their team, forbids plain members, and hides secret teams from outsiders", async () => {
    const w = await world();
    const { team: secret } = await w.teams.createTeam({
      organization: w.orgId,
      name: "Secret",
      privacy: TeamPrivacy.SECRET,
    });
    const teamId = secret?.id ?? "";
    await w.teams.addTeamMember({ organizationId: w.orgId, actorId: "", teamId, userId: w.mia, role: 2 });
    const as = (actorId: string) => ({ organizationId: w.orgId, actorId, teamId });
    expect((await failure(w.teams.listTeamMembers(as(w.max)))).message).toBe("No team found");
    expect((await w.teams.listTeamMembers(as(w.mia))).totalCount).toBe(1);
    expect((await w.teams.listTeamMembers(as(w.admin))).totalCount).toBe(1);
    await w.teams.addTeamMember({ ...as(w.mia), userId: w.max, role: TeamMemberRole.MEMBER });
    expect(
      (await failure(w.teams.addTeamMember({ ...as(w.max), userId: w.admin, role: TeamMemberRole.MEMBER }))).code,
    ).toBe(Code.PermissionDenied);
    expect((await failure(w.teams.listTeamMembers(as(w.stranger)))).code).toBe(Code.NotFound);
  });

  it("associates pipelines with access levels, once each", async () => {
    const w = await world();
    const base = { organizationId: w.orgId, actorId: w.admin, teamId: w.teamId };
    const pipelineId = newId();
    const added = await w.teams.addTeamPipeline({
      ...base,
      pipelineId,
      accessLevel: PipelineAccessLevel.READ_ONLY,
    });
    expect(added.pipeline).toMatchObject({ pipelineId, accessLevel: PipelineAccessLevel.READ_ONLY });
    expect(
      await failure(w.teams.addTeamPipeline({ ...base, pipelineId, accessLevel: PipelineAccessLevel.READ_ONLY })),
    ).toMatchObject({
      code: Code.AlreadyExists,
      message: "Validation failed: Pipeline has already been added to this team",
    });
    expect((await failure(w.teams.addTeamPipeline({ ...base, pipelineId: "" }))).message).toBe(
      "Validation failed: Pipeline could not be found, Access level must be read_only, build_and_read or manage_build_and_read",
    );
    const updated = await w.teams.updateTeamPipeline({
      ...base,
      pipelineId,
      accessLevel: PipelineAccessLevel.MANAGE_BUILD_AND_READ,
    });
    expect(updated.pipeline?.accessLevel).toBe(PipelineAccessLevel.MANAGE_BUILD_AND_READ);
    expect((await w.teams.listTeamPipelines(base)).totalCount).toBe(1);
    await w.teams.removeTeamPipeline({ ...base, pipelineId });
    expect((await failure(w.teams.getTeamPipeline({ ...base, pipelineId }))).message).toBe("No team pipeline found");
  });

  it("shows a visible team's pipelines to a non-member only where they may read them", async () => {
    const w = await world();
    const admin = { organizationId: w.orgId, actorId: w.admin };
    const [shared, secretive] = [newId(), newId()];
    for (const pipelineId of [shared, secretive])
      await w.teams.addTeamPipeline({
        ...admin,
        teamId: w.teamId,
        pipelineId,
        accessLevel: PipelineAccessLevel.READ_ONLY,
      });
    // Max is in no team yet; then in another team that reads `shared` only. Mia is in the team.
    await w.teams.addTeamMember({ ...admin, teamId: w.teamId, userId: w.mia, role: TeamMemberRole.MEMBER });
    const listed = async (actorId: string) => {
      const res = await w.teams.listTeamPipelines({ organizationId: w.orgId, actorId, teamId: w.teamId });
      return [res.pipelines.map((p) => p.pipelineId).sort(), res.totalCount];
    };
    expect(await listed(w.max)).toEqual([[], 0]);
    const { team: other } = await w.teams.createTeam({ organization: w.orgId, name: "QA" });
    await w.teams.addTeamMember({ ...admin, teamId: other?.id ?? "", userId: w.max, role: TeamMemberRole.MEMBER });
    await w.teams.addTeamPipeline({
      ...admin,
      teamId: other?.id ?? "",
      pipelineId: shared,
      accessLevel: PipelineAccessLevel.READ_ONLY,
    });
    expect(await listed(w.max)).toEqual([[shared], 1]);
    const everything = [[shared, secretive].sort(), 2];
    expect(await listed(w.mia)).toEqual(everything);
    expect(await listed(w.admin)).toEqual(everything);
    expect(await listed("")).toEqual(everything);
    const one = (actorId: string, pipelineId: string) =>
      w.teams.getTeamPipeline({ organizationId: w.orgId, actorId, teamId: w.teamId, pipelineId });
    expect((await one(w.max, shared)).pipeline?.pipelineId).toBe(shared);
    expect((await failure(one(w.max, secretive))).message).toBe("No team pipeline found");
    expect((await one(w.mia, secretive)).pipeline?.pipelineId).toBe(secretive);
  });

  it("shows every pipeline of a team to members of an organization without teams enforcement", async () => {
    const w = await world(false);
    const pipelineId = newId();
    await w.teams.addTeamPipeline({
      organizationId: w.orgId,
      actorId: w.admin,
      teamId: w.teamId,
      pipelineId,
      accessLevel: PipelineAccessLevel.READ_ONLY,
    });
    const res = await w.teams.listTeamPipelines({ organizationId: w.orgId, actorId: w.max, teamId: w.teamId });
    expect(res.pipelines.map((p) => p.pipelineId)).toEqual([pipelineId]);
  });

  it("associates suites of the same organization with read and edit levels", async () => {
    const w = await world();
    const base = { organizationId: w.orgId, actorId: w.admin, teamId: w.teamId };
    const { suite } = await w.teams.createSuite({ organization: w.orgId, name: "Unit Tests" });
    const { suite: foreign } = await w.teams.createSuite({ organization: w.otherId, name: "Unit Tests" });
    const { EDIT, READ, UNSPECIFIED } = SuiteAccessLevel;
    const added = await w.teams.addTeamSuite({ ...base, suiteId: suite?.id ?? "", accessLevels: [EDIT, READ, EDIT] });
    expect(added.suite?.accessLevels).toEqual([READ, EDIT]);
    expect(
      (await failure(w.teams.addTeamSuite({ ...base, suiteId: foreign?.id ?? "", accessLevels: [READ] }))).message,
    ).toBe("Validation failed: Suite could not be found");
    expect(
      (await failure(w.teams.updateTeamSuite({ ...base, suiteId: suite?.id ?? "", accessLevels: [UNSPECIFIED] })))
        .message,
    ).toBe("Validation failed: Access level must be a list of read and edit");
    expect((await failure(w.teams.updateTeamSuite({ ...base, suiteId: suite?.id ?? "", accessLevels: [] }))).code).toBe(
      Code.InvalidArgument,
    );
    const updated = await w.teams.updateTeamSuite({ ...base, suiteId: suite?.id ?? "", accessLevels: [READ] });
    expect(updated.suite?.accessLevels).toEqual([READ]);
    await w.teams.removeTeamSuite({ ...base, suiteId: suite?.id ?? "" });
    expect((await w.teams.listTeamSuites(base)).totalCount).toBe(0);
  });

  it("decides pipeline access from teams, and checks the teams a new pipeline is given to", async () => {
    const w = await world();
    const base = { organizationId: w.orgId, actorId: "", teamId: w.teamId };
    await w.teams.addTeamMember({ ...base, userId: w.mia, role: TeamMemberRole.MEMBER });
    const [p1, p2, p3] = [newId(), newId(), newId()];
    await w.teams.linkPipelineTeams({
      organizationId: w.orgId,
      pipelineId: p1,
      teams: { [w.teamId]: PipelineAccessLevel.BUILD_AND_READ },
    });
    await w.teams.addTeamPipeline({ ...base, pipelineId: p2, accessLevel: PipelineAccessLevel.READ_ONLY });

    const access = await w.teams.getPipelineAccess({
      organizationId: w.orgId,
      userId: w.mia,
      pipelineIds: [p1, p2, p3],
    });
    expect(access.pipelines.map((a) => [a.pipelineId, a.read, a.build, a.edit])).toEqual([
      [p1, true, true, false],
      [p2, true, false, false],
      [p3, false, false, false],
    ]);
    const admin = await w.teams.getPipelineAccess({ organizationId: w.orgId, userId: w.admin, pipelineIds: [p3] });
    expect(admin.pipelines[0]?.edit).toBe(true);
    const listed = await w.teams.listAccessiblePipelines({ organizationIds: [w.orgId], userId: w.mia });
    expect(listed.pipelines.map((a) => a.pipelineId).sort()).toEqual([p1, p2].sort());
    expect((await w.teams.listAccessiblePipelines({ organizationIds: [w.orgId], userId: w.admin })).pipelines).toEqual(
      [],
    );

    await w.teams.checkPipelineTeams({ organizationId: w.orgId, actorId: w.mia, teamIds: [w.teamId] });
    await w.teams.checkPipelineTeams({ organizationId: w.orgId, actorId: w.admin, teamIds: [w.teamId] });
    const notMine = await failure(
      w.teams.checkPipelineTeams({ organizationId: w.orgId, actorId: w.max, teamIds: [w.teamId] }),
    );
    expect(notMine.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(notMine.err as ConnectError)).toEqual([
      { field: "teams", code: "can only include teams you are a member of, not Web Team" },
    ]);
    const ghost = newId();
    const unknown = await failure(
      w.teams.checkPipelineTeams({ organizationId: w.otherId, actorId: "", teamIds: [w.teamId, ghost] }),
    );
    expect(fieldErrorsOf(unknown.err as ConnectError).map((e) => e.code)).toEqual([
      `has no team ${w.teamId} in this organization`,
      `has no team ${ghost} in this organization`,
    ]);
  });

  it("gives every member read and build, and admins edit, when teams are disabled", async () => {
    const w = await world(false);
    const p = newId();
    const member = await w.teams.getPipelineAccess({ organizationId: w.orgId, userId: w.max, pipelineIds: [p] });
    expect(member.pipelines[0]).toMatchObject({ read: true, build: true, edit: false });
    const stranger = await w.teams.getPipelineAccess({ organizationId: w.orgId, userId: w.stranger, pipelineIds: [p] });
    expect(stranger.pipelines[0]).toMatchObject({ read: false, build: false, edit: false });
  });

  it("sets all_pipelines on a principal's organizations exactly where teams do not decide", async () => {
    const s = setup();
    const { organization: teamsOn } = await s.ids.createOrganization({ name: "On", teamsEnabled: true });
    const { organization: teamsOff } = await s.ids.createOrganization({ name: "Off" });
    const { user } = await s.ids.createUser({ name: "U", email: "u@example.com" });
    await s.ids.addMember({ organization: teamsOn?.id ?? "", userId: user?.id ?? "" });
    await s.ids.addMember({ organization: teamsOff?.id ?? "", userId: user?.id ?? "" });
    const { secret } = await s.ids.createAccessToken({ userId: user?.id ?? "", scopes: ["read_pipelines"] });
    const { principal } = await s.ids.authenticateAccessToken({ secret });
    const bySlug = new Map(principal?.organizations.map((o) => [o.organization?.slug, o.allPipelines]));
    expect(bySlug.get("on")).toBeUndefined();
    expect(bySlug.get("off")).toMatchObject({ level: PipelineAccessLevel.BUILD_AND_READ, edit: false });
  });

  it("lists the teams an actor may see by name, paged, and only a user's with user_id", async () => {
    const w = await world();
    const mk = (name: string, privacy = TeamPrivacy.VISIBLE) =>
      w.teams.createTeam({ organization: w.orgId, actorId: w.admin, name, privacy });
    const secret = (await mk("Zeta secret", TeamPrivacy.SECRET)).team?.id ?? "";
    const alpha = (await mk("Alpha")).team?.id ?? "";
    await w.teams.addTeamMember({ organizationId: w.orgId, actorId: "", teamId: secret, userId: w.mia, role: 2 });
    const names = async (actorId: string, extra: Record<string, unknown> = {}) =>
      (await w.teams.listTeams({ organizationId: w.orgId, actorId, ...extra })).teams.map((t) => t.name);
    const all = await names(w.admin);
    expect(all[0]).toBe("Alpha");
    expect(all).toContain("Zeta secret");
    expect(await names(w.mia)).toContain("Zeta secret");
    expect(await names(w.max)).not.toContain("Zeta secret");
    expect(await names(w.admin, { userId: w.mia })).toEqual(["Zeta secret"]);
    expect(await names(w.max, { userId: w.mia })).toEqual([]);
    expect(await names(w.admin, { userId: "not-a-uuid" })).toEqual([]);
    const page = await w.teams.listTeams({ organizationId: w.orgId, actorId: w.admin, perPage: 1, page: 2 });
    expect([page.teams.length, page.totalCount]).toEqual([1, all.length]);
    expect((await failure(w.teams.listTeams({ organizationId: w.orgId, actorId: w.stranger }))).code).toBe(
      Code.NotFound,
    );
    expect(alpha).not.toBe("");
  });

  it("lets administrators create teams, administrators and maintainers change and delete them", async () => {
    const w = await world();
    expect((await failure(w.teams.createTeam({ organization: w.orgId, actorId: w.mia, name: "Mine" }))).code).toBe(
      Code.PermissionDenied,
    );
    const { team } = await w.teams.createTeam({
      organization: w.orgId,
      actorId: w.admin,
      name: "Platform",
      description: "builds things",
      membersCanCreatePipelines: false,
    });
    expect(team).toMatchObject({ slug: "platform", description: "builds things", membersCanCreatePipelines: false });
    const teamId = team?.id ?? "";
    const as = (actorId: string) => ({ organizationId: w.orgId, actorId, teamId });
    await w.teams.addTeamMember({ ...as(""), userId: w.mia, role: TeamMemberRole.MAINTAINER });
    await w.teams.addTeamMember({ ...as(""), userId: w.max, role: TeamMemberRole.MEMBER });
    expect((await failure(w.teams.updateTeam({ ...as(w.max), name: "Max's" }))).code).toBe(Code.PermissionDenied);
    const renamed = await w.teams.updateTeam({ ...as(w.mia), name: "Platform Ops", privacy: TeamPrivacy.SECRET });
    expect(renamed.team).toMatchObject({ name: "Platform Ops", slug: "platform-ops", privacy: TeamPrivacy.SECRET });
    expect(renamed.team?.description).toBe("builds things");
    const { team: other } = await w.teams.createTeam({ organization: w.orgId, actorId: w.admin, name: "Taken" });
    expect((await failure(w.teams.updateTeam({ ...as(w.admin), name: "Taken" }))).code).toBe(Code.AlreadyExists);
    expect((await failure(w.teams.updateTeam({ ...as(w.admin), description: "x".repeat(1001) }))).code).toBe(
      Code.InvalidArgument,
    );
    expect((await w.teams.getTeam(as(w.admin))).team?.name).toBe("Platform Ops");
    expect((await failure(w.teams.deleteTeam(as(w.max)))).code).toBe(Code.PermissionDenied);
    await w.teams.deleteTeam(as(w.mia));
    expect((await failure(w.teams.getTeam(as(w.admin)))).code).toBe(Code.NotFound);
    expect((await w.teams.listUserTeams({ organizationId: w.orgId, userId: w.mia })).teams).toEqual([]);
    expect((await failure(w.teams.deleteTeam(as(w.admin)))).code).toBe(Code.NotFound);
    expect(other?.id).toBeDefined();
  });

  it("lets only maintainers give pipelines to a team whose members may not create them", async () => {
    const w = await world();
    const { team } = await w.teams.createTeam({
      organization: w.orgId,
      actorId: w.admin,
      name: "Locked",
      membersCanCreatePipelines: false,
    });
    const teamId = team?.id ?? "";
    await w.teams.addTeamMember({ organizationId: w.orgId, actorId: "", teamId, userId: w.mia, role: 2 });
    await w.teams.addTeamMember({ organizationId: w.orgId, actorId: "", teamId, userId: w.max, role: 1 });
    const check = (actorId: string) =>
      w.teams.checkPipelineTeams({ organizationId: w.orgId, actorId, teamIds: [teamId] });
    await check(w.mia);
    await check(w.admin);
    expect(fieldErrorsOf((await failure(check(w.max))).err as ConnectError)).toEqual([
      {
        field: "teams",
        code: "can only include teams whose members may create pipelines, or that you maintain, not Locked",
      },
    ]);
    await w.teams.updateTeam({ organizationId: w.orgId, actorId: w.admin, teamId, membersCanCreatePipelines: true });
    await check(w.max);
  });
});
