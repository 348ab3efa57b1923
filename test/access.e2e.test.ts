import { Role } from "@conveyor/proto/identity";
import { api, arrangeCluster, arrangeMember, arrangeOrgUser, send, unique } from "./support/stack-env.js";
import { arrangeTeam, arrangeTeamMember } from "./support/teams-env.js";

// The permission matrix of team-based access over REST, with real pipelines and builds: organization admins, team
// maintainers and team members × the three team access levels (and a pipeline of no team of theirs) × reading,
// building and editing. Each answer is checked.

const SCOPES = ["read_pipelines", "write_pipelines", "read_builds", "write_builds", "view_teams", "write_teams"];
const LEVELS = ["read_only", "build_and_read", "manage_build_and_read", "none"] as const;
type Level = (typeof LEVELS)[number];
type Who = "admin" | "maintainer" | "member";

interface Pipe {
  id: string;
  slug: string;
}

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
const secrets = {} as Record<Who, string>;
const pipelines = {} as Record<Level, Pipe>;
let clusterId: string;
const base = () => `/v2/organizations/${org.organization.slug}/pipelines`;

/** What a non-admin may do at each level; admins may do everything everywhere. */
const ALLOWED: Record<Level, { read: boolean; build: boolean; edit: boolean }> = {
  read_only: { read: true, build: false, edit: false },
  build_and_read: { read: true, build: true, edit: false },
  manage_build_and_read: { read: true, build: true, edit: true },
  none: { read: false, build: false, edit: false },
};
const allowed = (who: Who, level: Level) =>
  who === "admin" ? { read: true, build: true, edit: true } : ALLOWED[level];

/** The status a request should get: its success code when allowed, 404 when the pipeline is hidden, else 403. */
const expected = (who: Who, level: Level, action: "read" | "build" | "edit", ok: number) => {
  const may = allowed(who, level);
  if (!may.read) return 404;
  return may[action] ? ok : 403;
};

/** A build created by the admin, so every user has one to read, cancel and rebuild. */
async function adminBuild(p: Pipe) {
  const res = await send("POST", `${base()}/${p.slug}/builds`, org.secret, { commit: "HEAD", branch: "main" });
  expect(res.status).toBe(201);
  return res.body as { number: number; id: string };
}

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN, teamsEnabled: true });
  clusterId = await arrangeCluster(org.organization.id);
  const maintainer = await arrangeMember(org.organization.id, Role.MEMBER, SCOPES);
  const member = await arrangeMember(org.organization.id, Role.MEMBER, SCOPES);
  secrets.admin = org.secret;
  secrets.maintainer = maintainer.secret;
  secrets.member = member.secret;
  const team = await arrangeTeam(org.organization.id);
  await arrangeTeamMember(org.organization.id, team.id, maintainer.user?.id ?? "", true);
  await arrangeTeamMember(org.organization.id, team.id, member.user?.id ?? "");
  for (const level of LEVELS) {
    const res = await send("POST", base(), org.secret, {
      name: unique(`Access ${level}`),
      repository: "git@github.com:acme/app.git",
      cluster_id: clusterId,
      configuration: "steps:\n  - command: make test\n",
    });
    expect(res.status).toBe(201);
    pipelines[level] = { id: res.body.id, slug: res.body.slug };
    if (level === "none") continue;
    const link = await send(
      "POST",
      `/v2/organizations/${org.organization.slug}/teams/${team.id}/pipelines`,
      org.secret,
      {
        pipeline_id: res.body.id,
        access_level: level,
      },
    );
    expect(link.status).toBe(201);
  }
});

describe.each(["admin", "maintainer", "member"] as const)("%s", (who) => {
  describe.each(LEVELS)("on a %s pipeline", (level) => {
    it("reads the pipeline, its builds and a build as allowed, and sees the webhook URL only with edit access", async () => {
      const p = pipelines[level];
      const build = await adminBuild(p);
      const got = await api(`${base()}/${p.slug}`, secrets[who]);
      expect(got.status).toBe(expected(who, level, "read", 200));
      if (got.status === 200) {
        const canEdit = allowed(who, level).edit;
        expect(got.body.provider.webhook_url === "").toBe(!canEdit);
      } else expect(got.body).toEqual({ message: "No pipeline found" });
      const list = await api(`${base()}/${p.slug}/builds`, secrets[who]);
      expect(list.status).toBe(expected(who, level, "read", 200));
      if (list.status === 200) expect(list.body.map((b: { id: string }) => b.id)).toContain(build.id);
      const one = await api(`${base()}/${p.slug}/builds/${build.number}`, secrets[who]);
      expect(one.status).toBe(expected(who, level, "read", 200));
      if (one.status === 200) expect(one.body.pipeline.provider.webhook_url === "").toBe(!allowed(who, level).edit);
    });

    it("creates, cancels and rebuilds builds as allowed", async () => {
      const p = pipelines[level];
      const created = await send("POST", `${base()}/${p.slug}/builds`, secrets[who], {
        commit: "HEAD",
        branch: "main",
      });
      expect(created.status).toBe(expected(who, level, "build", 201));
      if (created.status === 403) expect(created.body).toEqual({ message: "Forbidden" });
      const build = await adminBuild(p);
      const cancel = await send("PUT", `${base()}/${p.slug}/builds/${build.number}/cancel`, secrets[who]);
      expect(cancel.status).toBe(expected(who, level, "build", 200));
      if (cancel.status === 200) expect(cancel.body.state).toMatch(/^cancel/);
      const rebuild = await send("PUT", `${base()}/${p.slug}/builds/${build.number}/rebuild`, secrets[who]);
      expect(rebuild.status).toBe(expected(who, level, "build", 200));
      if (rebuild.status === 200) expect(rebuild.body.rebuilt_from.id).toBe(build.id);
    });

    it("edits, archives and unarchives the pipeline as allowed", async () => {
      const p = pipelines[level];
      const edit = await send("PATCH", `${base()}/${p.slug}`, secrets[who], { description: `edited by ${who}` });
      expect(edit.status).toBe(expected(who, level, "edit", 200));
      if (edit.status === 403) expect(edit.body).toEqual({ message: "Forbidden" });
      if (edit.status === 404) expect(edit.body).toEqual({ message: "No pipeline found" });
      const archive = await send("POST", `${base()}/${p.slug}/archive`, secrets[who]);
      expect(archive.status).toBe(expected(who, level, "edit", 200));
      if (archive.status === 200) {
        const unarchive = await send("POST", `${base()}/${p.slug}/unarchive`, secrets[who]);
        expect([unarchive.status, unarchive.body.archived_at]).toEqual([200, null]);
      } else {
        expect((await send("POST", `${base()}/${p.slug}/unarchive`, secrets[who])).status).toBe(archive.status);
      }
    });
  });

  it("lists only the pipelines and builds it may read", async () => {
    const visible = LEVELS.filter((level) => allowed(who, level).read).map((level) => pipelines[level].id);
    const hidden = LEVELS.filter((level) => !allowed(who, level).read).map((level) => pipelines[level].id);
    const listed = (await api(`${base()}?per_page=100`, secrets[who])).body.map((p: { id: string }) => p.id);
    expect(listed.sort()).toEqual([...visible].sort());
    for (const path of [`/v2/organizations/${org.organization.slug}/builds?per_page=100`, "/v2/builds?per_page=100"]) {
      const res = await api(path, secrets[who]);
      expect(res.status).toBe(200);
      const seen = new Set(res.body.map((b: { pipeline: { id: string } }) => b.pipeline.id));
      for (const id of visible) expect([path, id, seen.has(id)]).toEqual([path, id, true]);
      for (const id of hidden) expect([path, id, seen.has(id)]).toEqual([path, id, false]);
    }
  });
});

describe("pipeline create in an organization with teams", () => {
  it("links the given teams, lets members give only their own teams, and needs teams from non-admins", async () => {
    const member = await arrangeMember(org.organization.id, Role.MEMBER, SCOPES);
    const mine = await arrangeTeam(org.organization.id);
    const notMine = await arrangeTeam(org.organization.id);
    await arrangeTeamMember(org.organization.id, mine.id, member.user?.id ?? "");
    const body = {
      repository: "r",
      cluster_id: clusterId,
      configuration: "steps:\n  - command: x\n",
    };
    const created = await send("POST", base(), member.secret, {
      ...body,
      name: unique("Mine"),
      teams: { [mine.id]: "build_and_read" },
    });
    expect(created.status).toBe(201);
    expect(created.body.provider.webhook_url).toBe("");
    const links = await api(`/v2/organizations/${org.organization.slug}/teams/${mine.id}/pipelines`, member.secret);
    expect(links.body).toEqual([
      expect.objectContaining({ pipeline_id: created.body.id, access_level: "build_and_read" }),
    ]);
    expect((await api(`${base()}/${created.body.slug}`, member.secret)).status).toBe(200);
    expect((await send("PATCH", `${base()}/${created.body.slug}`, member.secret, { description: "x" })).status).toBe(
      403,
    );

    const before = (await api(`${base()}?per_page=100`, org.secret)).body.length;
    const foreign = await send("POST", base(), member.secret, {
      ...body,
      name: unique("Theirs"),
      teams: { [notMine.id]: "read_only" },
    });
    expect(foreign.status).toBe(422);
    expect(foreign.body).toEqual({
      message: "Validation Failed",
      errors: [{ field: "teams", code: `can only include teams you are a member of, not ${notMine.name}` }],
    });
    const none = await send("POST", base(), member.secret, { ...body, name: unique("None") });
    expect([none.status, none.body.errors[0].field]).toEqual([422, "teams"]);
    expect((await api(`${base()}?per_page=100`, org.secret)).body.length).toBe(before);
    // An admin may give any team of the organization.
    const byAdmin = await send("POST", base(), org.secret, {
      ...body,
      name: unique("Admin"),
      teams: { [notMine.id]: "manage_build_and_read" },
    });
    expect(byAdmin.status).toBe(201);
  });
});

describe("an organization with teams disabled", () => {
  it("lets members read and build every pipeline, and only admins edit", async () => {
    const plain = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
    const member = await arrangeMember(plain.organization.id, Role.MEMBER, SCOPES);
    const path = `/v2/organizations/${plain.organization.slug}/pipelines`;
    const p = await send("POST", path, plain.secret, {
      name: unique("Plain"),
      repository: "r",
      cluster_id: await arrangeCluster(plain.organization.id),
      configuration: "steps:\n  - command: x\n",
    });
    expect(p.status).toBe(201);
    const got = await api(`${path}/${p.body.slug}`, member.secret);
    expect([got.status, got.body.provider.webhook_url]).toEqual([200, ""]);
    const build = await send("POST", `${path}/${p.body.slug}/builds`, member.secret, {
      commit: "HEAD",
      branch: "main",
    });
    expect(build.status).toBe(201);
    expect((await send("PUT", `${path}/${p.body.slug}/builds/${build.body.number}/cancel`, member.secret)).status).toBe(
      200,
    );
    expect((await send("PATCH", `${path}/${p.body.slug}`, member.secret, { description: "x" })).status).toBe(403);
    expect((await send("PATCH", `${path}/${p.body.slug}`, plain.secret, { description: "x" })).status).toBe(200);
    expect((await api(path, member.secret)).body.map((x: { id: string }) => x.id)).toEqual([p.body.id]);
  });
});
