import { Role, TeamPrivacy } from "@conveyor/proto/identity";
import { api, arrangeCluster, arrangeMember, arrangeOrgUser, identity, send, unique } from "./support/stack-env.js";
import { arrangeTeam, arrangeTeamMember, registries, teams } from "./support/teams-env.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SCOPES = [
  "read_pipelines",
  "write_pipelines",
  "view_teams",
  "write_teams",
  "read_rules",
  "write_rules",
  "read_registries",
  "write_registries",
];

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let other: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
const slug = () => org.organization.slug;
const teamPath = (teamId: string) => `/v2/organizations/${slug()}/teams/${teamId}`;

/** Creates a pipeline over REST in the shared organization and returns it. */
async function pipeline(name = unique("Pipe")) {
  const res = await send("POST", `/v2/organizations/${slug()}/pipelines`, org.secret, {
    name,
    repository: "git@github.com:acme/app.git",
    cluster_id: clusterId,
    configuration: "steps:\n  - command: make\n",
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; slug: string };
}

/** Creates a pipeline in the other organization, which this organization's teams and rules must not reach. */
async function foreignPipeline() {
  const res = await send("POST", `/v2/organizations/${other.organization.slug}/pipelines`, other.secret, {
    name: unique("Foreign"),
    repository: "r",
    cluster_id: await arrangeCluster(other.organization.id),
    configuration: "steps:\n  - wait\n",
  });
  expect(res.status).toBe(201);
  return res.body as { id: string; slug: string };
}

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN, teamsEnabled: true });
  other = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN, teamsEnabled: true });
  clusterId = await arrangeCluster(org.organization.id);
});

describe("team members over REST", () => {
  it("adds at both spellings (201), lists, gets, changes the role and removes (204), created_at always set", async () => {
    const team = await arrangeTeam(org.organization.id);
    const base = `${teamPath(team.id)}/members`;
    const ann = await arrangeMember(org.organization.id, Role.MEMBER, ["view_teams"]);
    const bob = await arrangeMember(org.organization.id, Role.MEMBER, ["view_teams"]);

    const added = await send("POST", `${base}/`, org.secret, { user_id: ann.user?.id, role: "maintainer" });
    expect(added.status).toBe(201);
    expect(added.body).toEqual({
      user_id: ann.user?.id,
      user_name: ann.user?.name,
      role: "maintainer",
      created_at: expect.stringMatching(ISO_MS),
    });
    const plain = await send("POST", base, org.secret, { user_id: bob.user?.id, role: "member" });
    expect(plain.status).toBe(201);
    expect(plain.body.created_at).toMatch(ISO_MS);

    const list = await api(base, org.secret);
    expect(list.status).toBe(200);
    expect(list.body.map((m: { user_id: string }) => m.user_id).sort()).toEqual([ann.user?.id, bob.user?.id].sort());
    for (const m of list.body) expect(m.created_at).toMatch(ISO_MS);
    const page = await api(`${base}?per_page=1`, org.secret);
    expect(page.body).toHaveLength(1);
    expect(page.headers.get("link")).toContain('page=2>; rel="next"');

    const got = await api(`${base}/${ann.user?.id}`, org.secret);
    expect(got.body).toEqual(added.body);
    const promoted = await send("PATCH", `${base}/${bob.user?.id}`, org.secret, { role: "maintainer" });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ user_id: bob.user?.id, role: "maintainer" });

    const removed = await send("DELETE", `${base}/${bob.user?.id}`, org.secret);
    expect(removed.status).toBe(204);
    expect(removed.text).toBe("");
    expect(await api(`${base}/${bob.user?.id}`, org.secret)).toMatchObject({
      status: 404,
      body: { message: "No team member found" },
    });
  });

  it("answers 422 Validation failed with the reason for every bad add or update", async () => {
    const team = await arrangeTeam(org.organization.id);
    const base = `${teamPath(team.id)}/members`;
    const member = await arrangeMember(org.organization.id, Role.MEMBER, ["view_teams"]);
    const outsider = await arrangeMember(other.organization.id, Role.MEMBER, ["view_teams"]);
    const cases: Array<[string, unknown, string]> = [
      ["bad role", { user_id: member.user?.id, role: "owner" }, "Validation failed: Role must be member or maintainer"],
      ["no role", { user_id: member.user?.id }, "Validation failed: Role must be member or maintainer"],
      ["no user", { role: "member" }, "Validation failed: User can't be blank"],
      [
        "unknown user",
        { user_id: "00000000-0000-4000-8000-000000000000", role: "member" },
        "Validation failed: User could not be found",
      ],
      [
        "user of another organization",
        { user_id: outsider.user?.id, role: "member" },
        "Validation failed: User could not be found",
      ],
      [
        "both wrong",
        { user_id: 42, role: 1 },
        "Validation failed: User can't be blank, Role must be member or maintainer",
      ],
    ];
    for (const [label, body, message] of cases) {
      const res = await send("POST", base, org.secret, body);
      expect([label, res.status, res.body]).toEqual([label, 422, { message }]);
    }
    await send("POST", base, org.secret, { user_id: member.user?.id, role: "maintainer" });
    expect((await send("POST", `${base}/`, org.secret, { user_id: member.user?.id, role: "member" })).body).toEqual({
      message: "Validation failed: User is already a member of this team",
    });
    expect((await send("PATCH", `${base}/${member.user?.id}`, org.secret, { role: "boss" })).body).toEqual({
      message: "Validation failed: Role must be member or maintainer",
    });
    // The only maintainer can be neither demoted nor removed.
    const demote = await send("PATCH", `${base}/${member.user?.id}`, org.secret, { role: "member" });
    expect([demote.status, demote.body]).toEqual([
      422,
      { message: "Validation failed: Role can't be changed: a team needs at least one maintainer" },
    ]);
    const remove = await send("DELETE", `${base}/${member.user?.id}`, org.secret);
    expect([remove.status, remove.body]).toEqual([
      422,
      { message: "Team member could not be removed: a team needs at least one maintainer" },
    ]);
  });

  it("lets team maintainers manage the team, forbids plain members, and hides secret teams", async () => {
    const team = await arrangeTeam(org.organization.id, TeamPrivacy.SECRET);
    const base = `${teamPath(team.id)}/members`;
    const maintainer = await arrangeMember(org.organization.id, Role.MEMBER, SCOPES);
    const member = await arrangeMember(org.organization.id, Role.MEMBER, SCOPES);
    const outsider = await arrangeMember(org.organization.id, Role.MEMBER, SCOPES);
    await arrangeTeamMember(org.organization.id, team.id, maintainer.user?.id ?? "", true);
    const added = await send("POST", base, maintainer.secret, { user_id: member.user?.id, role: "member" });
    expect(added.status).toBe(201);
    const refused = await send("POST", base, member.secret, { user_id: outsider.user?.id, role: "member" });
    expect([refused.status, refused.body]).toEqual([403, { message: "Forbidden" }]);
    expect((await api(base, member.secret)).status).toBe(200);
    expect(await api(base, outsider.secret)).toMatchObject({ status: 404, body: { message: "No team found" } });
  });
});

describe("team pipelines over REST", () => {
  it("adds at both spellings, lists paged, gets, updates and removes by UUID and by the trailing-slash form", async () => {
    const team = await arrangeTeam(org.organization.id);
    const base = `${teamPath(team.id)}/pipelines`;
    const [p1, p2, p3] = [await pipeline(), await pipeline(), await pipeline()];

    const a = await send("POST", `${base}/`, org.secret, { pipeline_id: p1.id, access_level: "read_only" });
    expect(a.status).toBe(201);
    expect(a.body).toEqual({
      pipeline_id: p1.id,
      pipeline_url: expect.stringMatching(new RegExp(`/v2/organizations/${slug()}/pipelines/${p1.id}$`)),
      access_level: "read_only",
      created_at: expect.stringMatching(ISO_MS),
    });
    expect((await api(new URL(a.body.pipeline_url).pathname, org.secret)).body.slug).toBe(p1.slug);
    expect((await send("POST", base, org.secret, { pipeline_id: p2.id, access_level: "build_and_read" })).status).toBe(
      201,
    );
    expect(
      (await send("POST", base, org.secret, { pipeline_id: p3.id, access_level: "manage_build_and_read" })).status,
    ).toBe(201);

    const page1 = await api(`${base}?per_page=2`, org.secret);
    expect(page1.body.map((l: { pipeline_id: string }) => l.pipeline_id)).toEqual([p1.id, p2.id]);
    expect(page1.headers.get("link")).toContain('page=2>; rel="next"');
    expect(page1.headers.get("link")).toContain('page=2>; rel="last"');
    const page2 = await api(`${base}?per_page=2&page=2`, org.secret);
    expect(page2.body.map((l: { pipeline_id: string }) => l.pipeline_id)).toEqual([p3.id]);

    expect((await api(`${base}/${p2.id}`, org.secret)).body.access_level).toBe("build_and_read");
    const updated = await send("PATCH", `${base}/${p2.id}`, org.secret, { access_level: "read_only" });
    expect([updated.status, updated.body.access_level]).toEqual([200, "read_only"]);

    expect((await send("DELETE", `${base}/${p1.id}`, org.secret)).status).toBe(204);
    expect((await send("DELETE", `${base}/`, org.secret, { pipeline_id: p2.id })).status).toBe(204);
    expect((await send("DELETE", `${base}/?pipeline_id=${p3.id}`, org.secret)).status).toBe(204);
    expect((await api(base, org.secret)).body).toEqual([]);
    expect(await api(`${base}/${p1.id}`, org.secret)).toMatchObject({
      status: 404,
      body: { message: "No team pipeline found" },
    });
    const unnamed = await send("DELETE", `${base}/`, org.secret);
    expect(unnamed.status).toBe(422);
    expect(unnamed.body.message).toMatch(/^Team pipeline could not be deleted/);
  });

  it("answers 422 Validation failed for bad levels, unknown, foreign and duplicate pipelines", async () => {
    const team = await arrangeTeam(org.organization.id);
    const base = `${teamPath(team.id)}/pipelines`;
    const p = await pipeline();
    const foreign = await foreignPipeline();
    const level = "Access level must be read_only, build_and_read or manage_build_and_read";
    const cases: Array<[string, unknown, string]> = [
      ["bad level", { pipeline_id: p.id, access_level: "admin" }, `Validation failed: ${level}`],
      ["no level", { pipeline_id: p.id }, `Validation failed: ${level}`],
      [
        "unknown pipeline",
        { pipeline_id: "00000000-0000-4000-8000-000000000000", access_level: "read_only" },
        "Validation failed: Pipeline could not be found",
      ],
      [
        "pipeline of another organization",
        { pipeline_id: foreign.id, access_level: "read_only" },
        "Validation failed: Pipeline could not be found",
      ],
      ["nothing", {}, `Validation failed: Pipeline could not be found, ${level}`],
    ];
    for (const [label, body, message] of cases) {
      const res = await send("POST", base, org.secret, body);
      expect([label, res.status, res.body]).toEqual([label, 422, { message }]);
    }
    await send("POST", base, org.secret, { pipeline_id: p.id, access_level: "read_only" });
    expect((await send("POST", base, org.secret, { pipeline_id: p.id, access_level: "read_only" })).body).toEqual({
      message: "Validation failed: Pipeline has already been added to this team",
    });
    expect((await send("PATCH", `${base}/${p.id}`, org.secret, { access_level: "all" })).body).toEqual({
      message: `Validation failed: ${level}`,
    });
  });

  it("drops a team's association when the pipeline is deleted", async () => {
    const team = await arrangeTeam(org.organization.id);
    const base = `${teamPath(team.id)}/pipelines`;
    const p = await pipeline();
    await send("POST", base, org.secret, { pipeline_id: p.id, access_level: "read_only" });
    expect((await send("DELETE", `/v2/organizations/${slug()}/pipelines/${p.slug}`, org.secret)).status).toBe(204);
    for (let i = 0; i < 50; i++) {
      if ((await api(base, org.secret)).body.length === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await api(base, org.secret)).body).toEqual([]);
  });
});

describe("team suites over REST", () => {
  it("adds at suite, suite/, suites and suites/, lists, gets, updates and removes with and without a slash", async () => {
    const team = await arrangeTeam(org.organization.id);
    const base = `${teamPath(team.id)}`;
    const { suite } = await teams.createSuite({ organization: org.organization.id, name: unique("Suite") });
    const suiteId = suite?.id ?? "";
    for (const path of ["suite", "suite/", "suites", "suites/"]) {
      const added = await send("POST", `${base}/${path}`, org.secret, { suite_id: suiteId, access_level: ["read"] });
      expect([path, added.status]).toEqual([path, 201]);
      expect(added.body).toEqual({
        suite_id: suiteId,
        suite_url: expect.stringContaining(suiteId),
        access_level: ["read"],
        created_at: expect.stringMatching(ISO_MS),
      });
      const removed = await send("DELETE", `${base}/suites/${suiteId}${path.endsWith("/") ? "/" : ""}`, org.secret);
      expect([path, removed.status]).toEqual([path, 204]);
    }
    await send("POST", `${base}/suite`, org.secret, { suite_id: suiteId, access_level: ["edit", "read"] });
    const list = await api(`${base}/suites`, org.secret);
    expect(list.body.map((s: { access_level: string[] }) => s.access_level)).toEqual([["read", "edit"]]);
    const updated = await send("PATCH", `${base}/suites/${suiteId}`, org.secret, { access_level: ["read"] });
    expect([updated.status, updated.body.access_level]).toEqual([200, ["read"]]);
    expect((await api(`${base}/suites/${suiteId}`, org.secret)).body.access_level).toEqual(["read"]);
    expect((await send("DELETE", `${base}/suites/${suiteId}`, org.secret)).status).toBe(204);
    expect(await api(`${base}/suites/${suiteId}`, org.secret)).toMatchObject({
      status: 404,
      body: { message: "No team suite found" },
    });
  });

  it("answers 422 Validation failed for bad levels, unknown, foreign and duplicate suites", async () => {
    const team = await arrangeTeam(org.organization.id);
    const base = teamPath(team.id);
    const { suite } = await teams.createSuite({ organization: org.organization.id, name: unique("Suite") });
    const { suite: foreign } = await teams.createSuite({ organization: other.organization.id, name: unique("S") });
    const levels = "Access level must be a list of read and edit";
    const cases: Array<[string, unknown, string]> = [
      ["bad level", { suite_id: suite?.id, access_level: ["write"] }, `Validation failed: ${levels}`],
      ["not an array", { suite_id: suite?.id, access_level: "read" }, `Validation failed: ${levels}`],
      ["empty", { suite_id: suite?.id, access_level: [] }, `Validation failed: ${levels}`],
      ["no suite", { access_level: ["read"] }, "Validation failed: Suite can't be blank"],
      [
        "foreign suite",
        { suite_id: foreign?.id, access_level: ["read"] },
        "Validation failed: Suite could not be found",
      ],
    ];
    for (const [label, body, message] of cases) {
      const res = await send("POST", `${base}/suite`, org.secret, body);
      expect([label, res.status, res.body]).toEqual([label, 422, { message }]);
    }
    await send("POST", `${base}/suite`, org.secret, { suite_id: suite?.id, access_level: ["read"] });
    expect(
      (await send("POST", `${base}/suites/`, org.secret, { suite_id: suite?.id, access_level: ["read"] })).body,
    ).toEqual({
      message: "Validation failed: Suite has already been added to this team",
    });
    expect((await send("PATCH", `${base}/suites/${suite?.id}`, org.secret, { access_level: ["own"] })).body).toEqual({
      message: `Validation failed: ${levels}`,
    });
  });
});

describe("rules over REST", () => {
  it("creates with either value spelling (201), lists paged, gets and deletes (204)", async () => {
    const [a, b] = [await pipeline(), await pipeline()];
    const base = `/v2/organizations/${slug()}/rules`;
    const created = await send("POST", base, org.secret, {
      type: "pipeline.trigger_build.pipeline",
      value: { source_pipeline: a.slug, target_pipeline: b.id },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      uuid: expect.any(String),
      graphql_id: expect.any(String),
      organization_uuid: org.organization.id,
      url: expect.stringMatching(new RegExp(`/v2/organizations/${slug()}/rules/${created.body.uuid}$`)),
      type: "pipeline.trigger_build.pipeline",
      source_type: "pipeline",
      source_uuid: a.id,
      target_type: "pipeline",
      target_uuid: b.id,
      effect: "allow",
      action: "trigger_build",
      created_at: expect.stringMatching(ISO_MS),
      created_by: {
        id: org.user.id,
        graphql_id: expect.any(String),
        name: org.user.name,
        email: org.user.email,
        avatar_url: null,
        created_at: expect.stringMatching(ISO_MS),
      },
    });
    const second = await send("POST", base, org.secret, {
      type: "pipeline.artifacts_read.pipeline",
      value: { source_pipeline_uuid: a.id, target_pipeline_uuid: b.slug },
    });
    expect([second.status, second.body.action, second.body.target_uuid]).toEqual([201, "artifacts_read", b.id]);

    const page = await api(`${base}?per_page=1`, org.secret);
    expect(page.body).toHaveLength(1);
    expect(page.headers.get("link")).toContain('rel="next"');
    expect((await api(`${base}/${created.body.uuid}`, org.secret)).body).toEqual(created.body);
    const deleted = await send("DELETE", `${base}/${created.body.uuid}`, org.secret);
    expect([deleted.status, deleted.text]).toEqual([204, ""]);
    expect(await api(`${base}/${created.body.uuid}`, org.secret)).toMatchObject({
      status: 404,
      body: { message: "No rule found" },
    });
  });

  it("answers 422 {message} for unknown types, unknown or foreign pipelines and duplicates", async () => {
    const [a, b] = [await pipeline(), await pipeline()];
    const base = `/v2/organizations/${slug()}/rules`;
    const foreign = await foreignPipeline();
    const trigger = "pipeline.trigger_build.pipeline";
    const cases: Array<[string, unknown, RegExp]> = [
      [
        "unknown type",
        { type: "pipeline.deploy.pipeline", value: {} },
        /^Rule type pipeline\.deploy\.pipeline is not available/,
      ],
      ["no type", { value: { source_pipeline: a.id, target_pipeline: b.id } }, /^Rule type can't be blank/],
      [
        "unknown source",
        { type: trigger, value: { source_pipeline: "ghost", target_pipeline: b.id } },
        /could not be found/,
      ],
      [
        "foreign target",
        { type: trigger, value: { source_pipeline: a.id, target_pipeline: foreign.id } },
        /^Target pipeline .* could not be found/,
      ],
      ["no value", { type: trigger }, /^Source pipeline can't be blank, Target pipeline can't be blank$/],
    ];
    for (const [label, body, message] of cases) {
      const res = await send("POST", base, org.secret, body);
      expect([label, res.status, Object.keys(res.body)]).toEqual([label, 422, ["message"]]);
      expect([label, res.body.message]).toEqual([label, expect.stringMatching(message)]);
    }
    const rule = { type: trigger, value: { source_pipeline: a.id, target_pipeline: b.id } };
    expect((await send("POST", base, org.secret, rule)).status).toBe(201);
    const dup = await send("POST", base, org.secret, rule);
    expect([dup.status, dup.body.message]).toEqual([422, expect.stringContaining("already exists")]);
  });
});

describe("registry tokens over REST", () => {
  it("creates with 200 and the secret shown once, lists, gets, updates by POST and deletes with 200", async () => {
    const { registry } = await registries.createRegistry({ organization: org.organization.id, name: unique("Reg") });
    const base = `/v2/packages/organizations/${slug()}/registries/${registry?.slug}/tokens`;
    const created = await send("POST", base, org.secret, { description: "CI" });
    expect(created.status).toBe(200);
    const secret = created.body.token;
    expect(secret).toMatch(/^bkpt_[0-9a-f]{40}$/);
    expect(created.body).toEqual({
      id: expect.any(String),
      graphql_id: expect.any(String),
      description: "CI",
      url: expect.stringMatching(new RegExp(`${base}/${created.body.id}$`)),
      created_at: expect.stringMatching(ISO_MS),
      created_by: {
        id: org.user.id,
        graphql_id: expect.any(String),
        name: org.user.name,
        email: org.user.email,
        avatar_url: null,
        created_at: expect.stringMatching(ISO_MS),
      },
      organization: {
        id: org.organization.id,
        slug: slug(),
        url: expect.stringMatching(new RegExp(`/v2/organizations/${slug()}$`)),
        web_url: expect.any(String),
      },
      registry: {
        id: registry?.id,
        graphql_id: expect.any(String),
        slug: registry?.slug,
        url: expect.stringMatching(new RegExp(`/v2/packages/organizations/${slug()}/registries/${registry?.slug}$`)),
        web_url: expect.any(String),
      },
      token: secret,
    });
    const { token: _secret, ...withoutSecret } = created.body;

    const list = await api(base, org.secret);
    expect([list.status, list.body]).toEqual([200, [withoutSecret]]);
    const got = await api(`${base}/${created.body.id}`, org.secret);
    expect(got.body).toEqual(withoutSecret);
    expect(list.text + got.text).not.toContain(secret);

    const updated = await send("POST", `${base}/${created.body.id}`, org.secret, { description: "Deploys" });
    expect([updated.status, updated.body]).toEqual([200, { ...withoutSecret, description: "Deploys" }]);
    expect(updated.text).not.toContain(secret);
    const blank = await send("POST", `${base}/${created.body.id}`, org.secret, { description: "" });
    expect(blank.status).toBe(422);

    const deleted = await send("DELETE", `${base}/${created.body.id}`, org.secret);
    expect([deleted.status, deleted.text]).toEqual([200, ""]);
    expect(await api(`${base}/${created.body.id}`, org.secret)).toMatchObject({
      status: 404,
      body: { message: "No token found" },
    });
    expect((await api(base, org.secret)).body).toEqual([]);
  });

  it("keeps token management to administrators and registries to their organization", async () => {
    const { registry } = await registries.createRegistry({ organization: org.organization.id, name: unique("Reg") });
    const base = `/v2/packages/organizations/${slug()}/registries/${registry?.slug}/tokens`;
    const member = await arrangeMember(org.organization.id, Role.MEMBER, SCOPES);
    expect((await api(base, member.secret)).status).toBe(200);
    expect(await send("POST", base, member.secret, { description: "mine" })).toMatchObject({
      status: 403,
      body: { message: "Forbidden" },
    });
    const foreignPath = `/v2/packages/organizations/${other.organization.slug}/registries/${registry?.slug}/tokens`;
    expect(await api(foreignPath, other.secret)).toMatchObject({ status: 404, body: { message: "No registry found" } });
  });
});

describe("scopes and organization reach", () => {
  it("requires view_teams, write_teams, read_rules, write_rules, read_registries and write_registries", async () => {
    const team = await arrangeTeam(org.organization.id);
    const { registry } = await registries.createRegistry({ organization: org.organization.id, name: unique("Reg") });
    const tokens = `/v2/packages/organizations/${slug()}/registries/${registry?.slug}/tokens`;
    const none = await identity.createAccessToken({ userId: org.user.id, scopes: ["read_organizations"] });
    const cases: Array<[string, string, string]> = [
      ["GET", `${teamPath(team.id)}/members`, "view_teams"],
      ["GET", `${teamPath(team.id)}/pipelines`, "view_teams"],
      ["GET", `${teamPath(team.id)}/suites`, "view_teams"],
      ["POST", `${teamPath(team.id)}/members/`, "write_teams"],
      ["POST", `${teamPath(team.id)}/pipelines/`, "write_teams"],
      ["DELETE", `${teamPath(team.id)}/pipelines/`, "write_teams"],
      ["POST", `${teamPath(team.id)}/suite/`, "write_teams"],
      ["GET", `/v2/organizations/${slug()}/rules`, "read_rules"],
      ["POST", `/v2/organizations/${slug()}/rules`, "write_rules"],
      ["GET", tokens, "read_registries"],
      ["POST", tokens, "write_registries"],
    ];
    for (const [method, path, scope] of cases) {
      const res = await send(method, path, none.secret, method === "GET" ? undefined : {});
      expect([method, path, res.status, res.body]).toEqual([
        method,
        path,
        403,
        { message: `Your access token doesn't have the ${scope} scope` },
      ]);
    }
  });

  it("answers 404 for teams, rules and registries of another organization", async () => {
    const team = await arrangeTeam(org.organization.id);
    const { registry } = await registries.createRegistry({ organization: org.organization.id, name: unique("Reg") });
    const [a, b] = [await pipeline(), await pipeline()];
    const rule = await send("POST", `/v2/organizations/${slug()}/rules`, org.secret, {
      type: "pipeline.trigger_build.pipeline",
      value: { source_pipeline: a.id, target_pipeline: b.id },
    });
    const theirs = other.organization.slug;
    expect((await api(`/v2/organizations/${theirs}/teams/${team.id}/members`, other.secret)).body).toEqual({
      message: "No team found",
    });
    expect((await api(`/v2/organizations/${theirs}/teams/${team.id}/pipelines`, other.secret)).body).toEqual({
      message: "No team found",
    });
    expect((await api(`/v2/organizations/${theirs}/rules/${rule.body.uuid}`, other.secret)).body).toEqual({
      message: "No rule found",
    });
    expect((await send("DELETE", `/v2/organizations/${theirs}/rules/${rule.body.uuid}`, other.secret)).status).toBe(
      404,
    );
    expect(
      (await api(`/v2/packages/organizations/${theirs}/registries/${registry?.slug}/tokens`, other.secret)).body,
    ).toEqual({ message: "No registry found" });
    // And an organization the caller does not belong to is not found at all.
    expect((await api(`${teamPath(team.id)}/members`, other.secret)).body).toEqual({
      message: "No organization found",
    });
  });
});
