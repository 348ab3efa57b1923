import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import { arrangeCluster, arrangeMember, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";
import { arrangeTeam, arrangeTeamMember, registries, teams } from "./support/teams-env.js";

// Builds test/go-client/teams-check (the official go-buildkite client, v4) into the tool cache and runs it against
// the stack: every team member, team pipeline, team suite, rule and registry token call it makes must decode.
const cacheDir = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
const binary = join(cacheDir, "bin", "go-client-check", "teams-check");
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

beforeAll(() => {
  mkdirSync(join(cacheDir, "bin", "go-client-check"), { recursive: true });
  execFileSync("go", ["build", "-o", binary, "./teams-check"], {
    cwd: join(process.cwd(), "test/go-client"),
    stdio: "inherit",
  });
}, 300_000);

describe("go-buildkite decodes our team, rule and registry token routes", () => {
  it("adds, lists, gets, updates and removes team members, pipelines and suites; creates rules and tokens", async () => {
    const scopes = [
      "read_pipelines",
      "write_pipelines",
      "view_teams",
      "write_teams",
      "read_rules",
      "write_rules",
      "read_registries",
      "write_registries",
    ];
    const org = await arrangeOrgUser({ scopes, role: Role.ADMIN, teamsEnabled: true });
    const other = await arrangeMember(org.organization.id, Role.MEMBER, ["view_teams"]);
    const team = await arrangeTeam(org.organization.id);
    await arrangeTeamMember(org.organization.id, team.id, org.user.id, true);
    const cluster = await arrangeCluster(org.organization.id);
    const pipelines = [];
    for (const name of [unique("Source"), unique("Target")]) {
      const res = await send("POST", `/v2/organizations/${org.organization.slug}/pipelines`, org.secret, {
        name,
        repository: "git@github.com:acme/app.git",
        cluster_id: cluster,
        configuration: "steps:\n  - command: make\n",
      });
      expect(res.status).toBe(201);
      pipelines.push(res.body as { id: string; slug: string });
    }
    const [source, target] = pipelines as [{ id: string; slug: string }, { id: string; slug: string }];
    const { suite } = await teams.createSuite({ organization: org.organization.id, name: unique("Suite") });
    const { registry } = await registries.createRegistry({ organization: org.organization.id, name: unique("Reg") });

    const out = JSON.parse(
      execFileSync(binary, [], {
        env: {
          ...process.env,
          CONVEYOR_API_URL: stack.apiUrl,
          CONVEYOR_API_TOKEN: org.secret,
          CONVEYOR_ORG_SLUG: org.organization.slug,
          CONVEYOR_TEAM_ID: team.id,
          CONVEYOR_USER_ID: other.user?.id ?? "",
          CONVEYOR_PIPELINE_ID: source.id,
          CONVEYOR_SOURCE_PIPELINE: source.slug,
          CONVEYOR_TARGET_PIPELINE: target.slug,
          CONVEYOR_SUITE_ID: suite?.id ?? "",
          CONVEYOR_REGISTRY_SLUG: registry?.slug ?? "",
        },
        encoding: "utf8",
      }),
    );

    const m = out.members;
    expect(m.created).toMatchObject({ user_id: other.user?.id, user_name: other.user?.name, role: "member" });
    expect(m.created.created_at).toMatch(ISO);
    expect(m.listed.map((x: { user_id: string }) => x.user_id).sort()).toEqual([org.user.id, other.user?.id].sort());
    expect(m.page1).toHaveLength(1);
    expect(m.next_page).toBe(2);
    expect(m.got).toEqual(m.created);
    expect(m.updated.role).toBe("maintainer");
    expect(m.bad_role).toEqual({ status: 422, message: "Validation failed: Role must be member or maintainer" });
    expect(m.deleted_status).toBe(204);
    expect(m.after_delete.map((x: { user_id: string }) => x.user_id)).toEqual([org.user.id]);

    const p = out.pipelines;
    expect(p.created).toMatchObject({ pipeline_id: source.id, access_level: "read_only" });
    expect(p.created.pipeline_url).toContain(source.id);
    expect(p.created.created_at).toMatch(ISO);
    expect(p.listed).toEqual([p.created]);
    expect(p.got).toEqual(p.created);
    expect(p.updated.access_level).toBe("build_and_read");
    expect(p.deleted_status).toBe(204);
    expect(p.missing).toEqual({ status: 404, message: "No team pipeline found" });

    const s = out.suites;
    expect(s.created).toMatchObject({ suite_id: suite?.id, access_level: ["read"] });
    expect(s.created.created_at).toMatch(ISO);
    expect(s.listed).toEqual([s.created]);
    expect(s.got).toEqual(s.created);
    expect(s.updated.access_level).toEqual(["read", "edit"]);
    expect(s.deleted_status).toBe(204);

    const r = out.rules;
    expect(r.created).toMatchObject({
      type: "pipeline.trigger_build.pipeline",
      source_type: "pipeline",
      source_uuid: source.id,
      target_type: "pipeline",
      target_uuid: target.id,
      effect: "allow",
      action: "trigger_build",
      organization_uuid: org.organization.id,
      created_by: { id: org.user.id, name: org.user.name, email: org.user.email },
    });
    expect(r.created.created_by.graphql_id).not.toBe("");
    expect(r.created.created_at).toMatch(ISO);
    expect(r.duplicate.status).toBe(422);
    expect(r.listed.map((x: { uuid: string }) => x.uuid)).toEqual([r.created.uuid]);
    expect(r.got).toEqual(r.created);
    expect(r.deleted_status).toBe(204);
    expect(r.missing).toEqual({ status: 404, message: "No rule found" });

    const t = out.tokens;
    expect(t.created_status).toBe(200);
    expect(t.created.token).toMatch(/^bkpt_/);
    expect(t.created).toMatchObject({
      description: "go-buildkite",
      created_by: { id: org.user.id, avatar_url: "" },
      organization: { id: org.organization.id, slug: org.organization.slug },
      registry: { id: registry?.id, slug: registry?.slug },
    });
    expect(t.created.registry.graphql_id).not.toBe("");
    expect(t.created.organization.web_url).not.toBe("");
    expect(t.listed).toEqual([{ ...t.created, token: "" }]);
    expect(t.got).toEqual({ ...t.created, token: "" });
    expect(t.updated).toEqual({ ...t.created, token: "", description: "renamed" });
    expect(t.deleted_status).toBe(200);
    expect(t.missing).toEqual({ status: 404, message: "No token found" });

    const tm = out.teams;
    expect(tm.created).toMatchObject({
      name: "Go team",
      slug: "go-team",
      description: "from go",
      privacy: "visible",
      default: false,
      members_can_create_pipelines: true,
      members_can_create_suites: false,
    });
    expect(tm.created.created_at).toMatch(ISO);
    expect(tm.listed.map((x: { id: string }) => x.id).sort()).toEqual([team.id, tm.created.id].sort());
    expect(tm.listed_page1).toHaveLength(1);
    // The other member left the team above: a user_id filter of theirs lists nothing.
    expect(tm.by_user).toEqual([]);
    expect(tm.got).toEqual(tm.created);
    // go-buildkite's update sends every boolean: members_can_create_pipelines false, the name kept.
    expect(tm.updated).toMatchObject({
      id: tm.created.id,
      name: "Go team",
      description: "changed by go",
      privacy: "secret",
      members_can_create_pipelines: false,
    });
    expect(tm.deleted_status).toBe(204);
    expect(tm.missing).toEqual({ status: 404, message: "No team found" });
  });
});
