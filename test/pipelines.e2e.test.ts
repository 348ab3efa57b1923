import { Role } from "@conveyor/proto/identity";
import { api, arrangeCluster, arrangeMember, arrangeOrgUser, identity, send, unique } from "./support/stack-env.js";
import { arrangeTeam, arrangeTeamMember } from "./support/teams-env.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ALL = ["read_pipelines", "write_pipelines", "read_organizations"];

const YAML = `env:
  GLOBAL: "1"
steps:
  - label: ":hammer: Test"
    key: test
    command:
      - npm ci
      - npm test
    agents:
      queue: default
    parallelism: 2
    artifact_paths: "coverage/**/*"
    env:
      CI: "true"
  - wait
  - block: Deploy?
    key: gate
  - trigger: deploy-app
    label: Deploy
    async: true
    build:
      branch: main
`;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
const base = () => `/v2/organizations/${org.organization.slug}/pipelines`;
const count = async () => (await api(`${base()}?include_archived=true&per_page=100`, org.secret)).body.length;

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: ALL, role: Role.ADMIN });
  clusterId = await arrangeCluster(org.organization.id);
});

describe("pipelines over REST", () => {
  it("creates a YAML pipeline and returns every field with the documented type", async () => {
    const res = await send("POST", base(), org.secret, {
      name: "Web App",
      repository: "git@github.com:acme/web.git",
      cluster_id: clusterId,
      configuration: YAML,
      description: "The web app",
      tags: ["web", ":rocket:"],
      env: { TEAM: "web" },
    });
    expect(res.status).toBe(201);
    const p = res.body;
    expect(p).toMatchObject({
      name: "Web App",
      slug: "web-app",
      description: "The web app",
      repository: "git@github.com:acme/web.git",
      cluster_id: clusterId,
      pipeline_template_uuid: null,
      branch_configuration: null,
      default_branch: "main",
      skip_queued_branch_builds: false,
      skip_queued_branch_builds_filter: null,
      cancel_running_branch_builds: false,
      cancel_running_branch_builds_filter: null,
      allow_rebuilds: true,
      visibility: "private",
      tags: ["web", ":rocket:"],
      env: { TEAM: "web" },
      configuration: YAML,
      archived_at: null,
      scheduled_builds_count: 0,
      running_builds_count: 0,
      scheduled_jobs_count: 0,
      running_jobs_count: 0,
      waiting_jobs_count: 0,
    });
    expect(p.url).toMatch(new RegExp(`/v2/organizations/${org.organization.slug}/pipelines/web-app$`));
    expect(p.builds_url).toBe(`${p.url}/builds`);
    expect(p.badge_url).toMatch(/\.svg$/);
    expect(p.created_at).toMatch(ISO_MS);
    expect(p.created_by).toMatchObject({
      id: org.user.id,
      name: org.user.name,
      email: org.user.email,
      avatar_url: null,
    });
    expect(p.provider.id).toBe("github");
    expect(p.provider.webhook_url).toMatch(/^https?:\/\/.+\/webhooks\//);
    expect(p.provider.settings).toMatchObject({ trigger_mode: "code", build_branches: true, repository: "acme/web" });
    expect(p.steps.map((s: { type: string }) => s.type)).toEqual(["script", "waiter", "manual", "trigger"]);
    expect(p.steps[0]).toMatchObject({
      type: "script",
      name: ":hammer: Test",
      command: "npm ci\nnpm test",
      agent_query_rules: ["queue=default"],
      parallelism: 2,
      artifact_paths: "coverage/**/*",
      env: { CI: "true" },
    });
    expect(p.steps[2]).toMatchObject({ type: "manual", label: "Deploy?" });
    expect(p.steps[3]).toMatchObject({ type: "trigger", pipeline: "deploy-app", async: true });

    const got = await api(`${base()}/web-app`, org.secret);
    expect(got.body).toEqual(p);
  });

  it("creates a visual pipeline whose configuration matches its steps", async () => {
    const res = await send("POST", base(), org.secret, {
      name: "Visual One",
      repository: "https://example.com/repo.git",
      cluster_id: clusterId,
      steps: [
        { type: "script", name: "Build", command: "make", agent_query_rules: ["queue=linux"] },
        { type: "waiter" },
        { type: "manual", label: "Ship it" },
        {
          type: "trigger",
          label: "Deploy",
          trigger_project_slug: "deployer",
          trigger_branch: "main",
          trigger_async: false,
        },
      ],
      env: { FOO: "bar" },
    });
    expect(res.status).toBe(201);
    expect(res.body.provider).toMatchObject({ id: "git", settings: expect.any(Object) });
    expect(res.body.steps[0]).toMatchObject({
      type: "script",
      name: "Build",
      command: "make",
      agent_query_rules: ["queue=linux"],
    });
    expect(res.body.steps[3]).toMatchObject({ type: "trigger", pipeline: "deployer", async: false });
    expect(res.body.configuration).toContain("make");
    expect(res.body.configuration).toContain("deployer");
    expect(res.body.env).toEqual({ FOO: "bar" });
  });

  it("refuses duplicate names and slugs with 422 and creates nothing", async () => {
    const before = await count();
    const dupName = await send("POST", base(), org.secret, {
      name: "web app",
      slug: "another-slug",
      repository: "r",
      cluster_id: clusterId,
      configuration: "steps:\n  - command: x\n",
    });
    expect(dupName.status).toBe(422);
    expect(dupName.body).toEqual({
      message: "Validation Failed",
      errors: [{ field: "name", code: "has already been taken" }],
    });
    const dupSlug = await send("POST", base(), org.secret, {
      name: "Web  APP!",
      repository: "r",
      cluster_id: clusterId,
      configuration: "steps:\n  - command: x\n",
    });
    expect(dupSlug.status).toBe(422);
    expect(dupSlug.body.errors).toContainEqual({ field: "slug", code: "has already been taken" });
    expect(await count()).toBe(before);
  });

  it("answers a dozen malformed creates with documented 4xx bodies and changes nothing", async () => {
    const before = await count();
    const good = {
      name: unique("Bad"),
      repository: "r",
      cluster_id: clusterId,
      configuration: "steps:\n  - command: x\n",
    };
    const cases: Array<[string, unknown, number, string]> = [
      ["missing everything", {}, 422, "name"],
      ["blank name", { ...good, name: "  " }, 422, "name"],
      ["no repository", { ...good, repository: undefined }, 422, "repository"],
      ["no cluster", { ...good, cluster_id: undefined }, 422, "cluster_id"],
      ["unknown cluster", { ...good, cluster_id: "00000000-0000-4000-8000-000000000000" }, 422, "cluster_id"],
      ["no steps", { ...good, configuration: undefined }, 422, "configuration"],
      ["invalid YAML", { ...good, configuration: "steps: [\n  - command: x" }, 422, "configuration"],
      [
        "invalid step",
        { ...good, configuration: "steps:\n  - command: x\n    parallelism: lots\n" },
        422,
        "configuration",
      ],
      ["bad slug", { ...good, slug: "-nope" }, 422, "slug"],
      ["bad visibility", { ...good, visibility: "secret" }, 422, "visibility"],
      ["name not a string", { ...good, name: 42 }, 422, "name"],
      ["tags not an array", { ...good, tags: "web" }, 422, "tags"],
      ["env value not a string", { ...good, env: { A: 1 } }, 422, "env.A"],
      ["unknown provider setting", { ...good, provider_settings: { bogus: true } }, 422, "provider_settings.bogus"],
      ["both forms", { ...good, steps: [{ type: "waiter" }] }, 422, "configuration"],
      [
        "visual step without command",
        { ...good, configuration: undefined, steps: [{ type: "script", name: "x" }] },
        422,
        "steps",
      ],
      [
        "teams in a teams-disabled org",
        { ...good, teams: { "00000000-0000-4000-8000-000000000001": "read_only" } },
        422,
        "teams",
      ],
    ];
    for (const [label, body, status, field] of cases) {
      const res = await send("POST", base(), org.secret, body);
      expect([label, res.status]).toEqual([label, status]);
      expect(res.body.message).toBe("Validation Failed");
      expect(
        res.body.errors.some((e: { field: string; code: string }) => e.field.startsWith(field) && e.code.length > 0),
      ).toBe(true);
    }
    const raw = await api(base(), org.secret, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{nope",
    });
    expect(raw.status).toBe(400);
    const wrongType = await api(base(), org.secret, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "name=x",
    });
    expect(wrongType.status).toBe(415);
    expect(await count()).toBe(before);
  });

  it("updates only the keys given, clears on empty values, and regenerates the slug from a new name", async () => {
    await send("POST", base(), org.secret, {
      name: "Patch Me",
      repository: "r",
      cluster_id: clusterId,
      configuration: "steps:\n  - command: x\n",
      description: "d",
      branch_configuration: "main",
    });
    const described = await send("PATCH", `${base()}/patch-me`, org.secret, { description: "new words" });
    expect(described.status).toBe(200);
    expect(described.body).toMatchObject({ description: "new words", branch_configuration: "main", slug: "patch-me" });
    const cleared = await send("PATCH", `${base()}/patch-me`, org.secret, {
      description: "",
      branch_configuration: "",
      cluster_id: null,
    });
    expect(cleared.body).toMatchObject({ description: null, branch_configuration: null, cluster_id: null });
    const renamed = await send("PATCH", `${base()}/patch-me`, org.secret, { name: "Patched Pipeline" });
    expect(renamed.body.slug).toBe("patched-pipeline");
    expect((await api(`${base()}/patch-me`, org.secret)).status).toBe(404);
    const custom = await send("PATCH", `${base()}/patched-pipeline`, org.secret, {
      slug: "custom-slug",
      configuration: "steps:\n  - wait\n",
    });
    expect(custom.body).toMatchObject({ slug: "custom-slug", name: "Patched Pipeline", steps: [{ type: "waiter" }] });
    const teams = await send("PATCH", `${base()}/custom-slug`, org.secret, { teams: {} });
    expect(teams.status).toBe(422);
    expect(teams.body.errors[0].field).toBe("teams");
    const clash = await send("PATCH", `${base()}/custom-slug`, org.secret, { name: "Web App" });
    expect(clash.status).toBe(422);
    expect((await api(`${base()}/custom-slug`, org.secret)).body.name).toBe("Patched Pipeline");
  });

  it("archives to read-only and hidden, unarchives, and refuses the wrong state", async () => {
    await send("POST", base(), org.secret, {
      name: "Old One",
      repository: "r",
      cluster_id: clusterId,
      configuration: "steps:\n  - wait\n",
    });
    const archived = await send("POST", `${base()}/old-one/archive`, org.secret);
    expect(archived.status).toBe(200);
    expect(archived.body.archived_at).toMatch(ISO_MS);
    expect((await api(base(), org.secret)).body.map((p: { slug: string }) => p.slug)).not.toContain("old-one");
    expect((await api(`${base()}?archived=true`, org.secret)).body.map((p: { slug: string }) => p.slug)).toEqual([
      "old-one",
    ]);
    const edit = await send("PATCH", `${base()}/old-one`, org.secret, { description: "x" });
    expect(edit.status).toBe(422);
    expect(edit.body.message).toMatch(/archived/);
    expect((await send("POST", `${base()}/old-one/archive`, org.secret)).body).toEqual({
      message: "Pipeline could not be archived.",
    });
    const back = await send("POST", `${base()}/old-one/unarchive`, org.secret);
    expect(back.status).toBe(200);
    expect(back.body.archived_at).toBeNull();
    expect((await send("POST", `${base()}/old-one/unarchive`, org.secret)).body).toEqual({
      message: "Pipeline could not be unarchived.",
    });
  });

  it("deletes with 204, then the pipeline is gone", async () => {
    await send("POST", base(), org.secret, {
      name: "Doomed",
      repository: "r",
      cluster_id: clusterId,
      configuration: "steps:\n  - wait\n",
    });
    expect((await send("DELETE", `${base()}/doomed`, org.secret)).status).toBe(204);
    const gone = await api(`${base()}/doomed`, org.secret);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ message: "No pipeline found" });
    expect((await send("DELETE", `${base()}/doomed`, org.secret)).status).toBe(404);
  });

  it("lists by name with paging", async () => {
    const all = await api(`${base()}?per_page=100`, org.secret);
    const names = all.body.map((p: { name: string }) => p.name.toLowerCase());
    expect(names).toEqual([...names].sort());
    const first = await api(`${base()}?per_page=1`, org.secret);
    expect(first.body).toHaveLength(1);
    expect(first.headers.get("link")).toContain('page=2>; rel="next"');
  });

  it("hides webhook URLs from members and forbids them to edit", async () => {
    const member = await arrangeMember(org.organization.id, Role.MEMBER, ALL);
    const seen = await api(`${base()}/web-app`, member.secret);
    expect(seen.status).toBe(200);
    expect(seen.body.provider.webhook_url).toBe("");
    const edit = await send("PATCH", `${base()}/web-app`, member.secret, { description: "mine now" });
    expect(edit.status).toBe(403);
    expect(edit.body).toEqual({ message: "Forbidden" });
    expect((await send("POST", `${base()}/web-app/archive`, member.secret)).status).toBe(403);
    expect((await send("PATCH", `${base()}/no-such-pipeline`, member.secret, {})).status).toBe(404);
  });

  it("requires teams from non-admins when teams are enabled", async () => {
    const teamsOrg = await arrangeOrgUser({ scopes: ALL, role: Role.ADMIN, teamsEnabled: true });
    const cluster = await arrangeCluster(teamsOrg.organization.id);
    const path = `/v2/organizations/${teamsOrg.organization.slug}/pipelines`;
    const body = { name: unique("T"), repository: "r", cluster_id: cluster, configuration: "steps:\n  - wait\n" };
    const member = await arrangeMember(teamsOrg.organization.id, Role.MEMBER, ALL);
    const refused = await send("POST", path, member.secret, body);
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0].field).toBe("teams");
    const team = (await arrangeTeam(teamsOrg.organization.id)).id;
    await arrangeTeamMember(teamsOrg.organization.id, team, member.user?.id ?? "");
    expect((await send("POST", path, member.secret, { ...body, teams: { [team]: "build_and_read" } })).status).toBe(
      201,
    );
    expect((await send("POST", path, teamsOrg.secret, { ...body, name: unique("T") })).status).toBe(201);
    expect((await send("POST", path, member.secret, { ...body, name: unique("T"), team_uuids: [team] })).status).toBe(
      201,
    );
    // Teams must exist in the organization, and a non-admin may only give teams they belong to.
    const ghost = "6f1c0e1a-0000-4000-8000-000000000001";
    const unknown = await send("POST", path, member.secret, {
      ...body,
      name: unique("T"),
      teams: { [ghost]: "read_only" },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors).toEqual([{ field: "teams", code: `has no team ${ghost} in this organization` }]);
    const notMine = (await arrangeTeam(teamsOrg.organization.id)).id;
    const refusedTeam = await send("POST", path, member.secret, {
      ...body,
      name: unique("T"),
      teams: { [notMine]: "read_only" },
    });
    expect(refusedTeam.status).toBe(422);
    expect(refusedTeam.body.errors[0].field).toBe("teams");
  });

  it("checks scopes and organization reach", async () => {
    const reader = await identity.createAccessToken({ userId: org.user.id, scopes: ["read_pipelines"] });
    const res = await send("POST", base(), reader.secret, { name: "x" });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ message: "Your access token doesn't have the write_pipelines scope" });
    const stranger = await arrangeOrgUser({ scopes: ALL });
    expect((await api(`${base()}/web-app`, stranger.secret)).body).toEqual({ message: "No organization found" });
  });
});
