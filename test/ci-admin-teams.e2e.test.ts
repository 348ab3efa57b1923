import { Role } from "@conveyor/proto/identity";
import { runCiAdmin } from "./support/ci-admin.js";
import { api, arrangeMember, arrangeOrgUser, stack, unique } from "./support/stack-env.js";

const ciAdmin = (...args: string[]) => runCiAdmin(args);

describe("ci-admin teams, suites and registries", () => {
  it("creates a team, adds a member, creates a suite and a registry that the REST API then serves", async () => {
    const org = await arrangeOrgUser({
      scopes: ["view_teams", "write_teams", "read_registries", "write_registries"],
      role: Role.ADMIN,
      teamsEnabled: true,
    });
    const slug = org.organization.slug;
    const team = await ciAdmin("team", "create", "--org", slug, "--name", "Platform Team", "--privacy", "secret");
    expect(team.code).toBe(0);
    expect(team.json).toMatchObject({ slug: "platform-team", name: "Platform Team", privacy: "secret" });
    expect(team.json.id).toMatch(/^[0-9a-f-]{36}$/);

    const user = await arrangeMember(org.organization.id, Role.MEMBER, ["view_teams"]);
    const added = await ciAdmin(
      "team",
      "member",
      "add",
      "--org",
      slug,
      "--team",
      team.json.id,
      "--user",
      user.user?.id ?? "",
    );
    expect(added.code).toBe(0);
    expect(added.json).toMatchObject({ team_id: team.json.id, user_id: user.user?.id, role: "member" });
    const members = await api(`/v2/organizations/${slug}/teams/${team.json.id}/members`, org.secret);
    expect(members.body.map((m: { user_id: string }) => m.user_id)).toEqual([user.user?.id]);

    const suite = await ciAdmin("suite", "create", "--org", slug, "--name", "Unit Tests");
    expect(suite.code).toBe(0);
    expect(suite.json).toMatchObject({ slug: "unit-tests", name: "Unit Tests" });
    const linked = await api(`/v2/organizations/${slug}/teams/${team.json.id}/suite`, org.secret, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ suite_id: suite.json.id, access_level: ["read"] }),
    });
    expect(linked.status).toBe(201);

    const registry = await ciAdmin(
      "registry",
      "create",
      "--org",
      slug,
      "--name",
      "Node Packages",
      "--ecosystem",
      "npm",
    );
    expect(registry.code).toBe(0);
    expect(registry.json.slug).toBe("node-packages");
    const tokens = await api(`/v2/packages/organizations/${slug}/registries/${registry.json.slug}/tokens`, org.secret);
    expect([tokens.status, tokens.body]).toEqual([200, []]);
  });

  it("fails with a clear message and a non-zero exit", async () => {
    const name = unique("Dup Team");
    expect((await ciAdmin("team", "create", "--org", stack.orgSlug, "--name", name)).code).toBe(0);
    const dup = await ciAdmin("team", "create", "--org", stack.orgSlug, "--name", name);
    expect([dup.code, dup.stderr]).toEqual([1, expect.stringContaining("name has already been taken")]);
    const privacy = await ciAdmin("team", "create", "--org", stack.orgSlug, "--name", "x", "--privacy", "hidden");
    expect([privacy.code, privacy.stderr]).toEqual([2, expect.stringContaining("--privacy must be visible or secret")]);
    const role = await ciAdmin(
      "team",
      "member",
      "add",
      "--org",
      stack.orgSlug,
      "--team",
      "t",
      "--user",
      "u",
      "--role",
      "x",
    );
    expect([role.code, role.stderr]).toEqual([2, expect.stringContaining("--role must be member or maintainer")]);
    const noTeam = await ciAdmin("team", "member", "add", "--org", stack.orgSlug, "--team", "nope", "--user", "nobody");
    expect([noTeam.code, noTeam.stderr]).toEqual([1, expect.stringContaining("No team found")]);
    const noOrg = await ciAdmin("registry", "create", "--org", "no-such-org", "--name", "R");
    expect([noOrg.code, noOrg.stderr]).toEqual([1, expect.stringContaining("No organization found")]);
  });
});
