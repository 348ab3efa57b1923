import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { JobEventType } from "@conveyor/proto/builds";
import { Role } from "@conveyor/proto/identity";
import { arrangeCluster, arrangeMember, arrangeOrgUser, builds, send, stack } from "./support/stack-env.js";

// Builds test/go-client (the official go-buildkite client) once into the tool cache and runs it against the stack.
const cacheDir = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
const binary = join(cacheDir, "bin", "go-client-check", "go-client-check");

beforeAll(() => {
  mkdirSync(join(cacheDir, "bin", "go-client-check"), { recursive: true });
  execFileSync("go", ["build", "-o", binary, "."], { cwd: join(process.cwd(), "test/go-client"), stdio: "inherit" });
}, 300_000);

describe("go-buildkite decodes our organization routes", () => {
  it("lists, gets, pages and reports errors as the real client expects", async () => {
    // An organization of its own with two members, so that the first page of one member has a next page.
    const org = await arrangeOrgUser({ scopes: ["read_organizations"], role: Role.ADMIN });
    await arrangeMember(org.organization.id, Role.MEMBER, ["read_organizations"]);
    const out = JSON.parse(
      execFileSync(binary, [], {
        env: {
          ...process.env,
          CONVEYOR_API_URL: stack.apiUrl,
          CONVEYOR_API_TOKEN: org.secret,
          CONVEYOR_ORG_SLUG: org.organization.slug,
        },
        encoding: "utf8",
      }),
    );
    expect(out.organization.slug).toBe(org.organization.slug);
    expect(out.organization.created_at).toMatch(/Z$/);
    expect(out.organizations.map((o: { slug: string }) => o.slug)).toContain(org.organization.slug);
    expect(out.members).toHaveLength(2);
    expect(out.member.id).toBe(out.members[0].id);
    expect(out.access_token.scopes).toContain("read_organizations");
    expect(out.missing_org_status).toBe(404);
    expect(out.missing_org_error).toBe("No organization found");
    expect(out.members_page1).toMatchObject({ count: 1, next_page: 2 });
  });
});

describe("go-buildkite decodes our builds routes", () => {
  it("creates, lists with filters, gets, cancels and rebuilds a build", async () => {
    const org = await arrangeOrgUser({
      scopes: ["read_builds", "write_builds", "read_pipelines", "write_pipelines", "read_organizations"],
      role: Role.ADMIN,
    });
    const pipelines = `/v2/organizations/${org.organization.slug}/pipelines`;
    const created = await send("POST", pipelines, org.secret, {
      name: "Go Client",
      repository: "git@github.com:acme/go.git",
      cluster_id: await arrangeCluster(org.organization.id),
      configuration: "steps:\n  - label: Test\n    command: make test\n    priority: 2\n",
    });
    expect(created.status).toBe(201);
    const slug = created.body.slug;
    // A build whose job ran on an agent and exited 0, so exit_status and agent are decoded filled in.
    const ran = await send("POST", `${pipelines}/${slug}/builds`, org.secret, { commit: "HEAD", branch: "main" });
    expect(ran.status).toBe(201);
    const jobId = ran.body.jobs[0].id;
    const agent = { id: randomUUID(), name: "go-agent", hostname: "h", ipAddress: "127.0.0.1", userAgent: "ua" };
    await builds.transitionJob({ jobId, event: JobEventType.ASSIGN, agent });
    await builds.transitionJob({ jobId, event: JobEventType.ACCEPT });
    await builds.transitionJob({ jobId, event: JobEventType.START });
    await builds.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus: 0 });

    const out = JSON.parse(
      execFileSync(binary, [], {
        env: {
          ...process.env,
          CONVEYOR_API_URL: stack.apiUrl,
          CONVEYOR_API_TOKEN: org.secret,
          CONVEYOR_ORG_SLUG: org.organization.slug,
          CONVEYOR_PIPELINE_SLUG: slug,
          CONVEYOR_FINISHED_BUILD: String(ran.body.number),
        },
        encoding: "utf8",
      }),
    ).builds;
    const number = out.created.number;
    expect(out.created).toMatchObject({
      state: "scheduled",
      branch: "go-client",
      message: "Built by go-buildkite",
      env: { FROM: "go" },
      meta_data: { client: "go-buildkite" },
      pull_request: { id: "12", base: "main" },
      creator: { id: org.user.id },
      pipeline: { slug },
    });
    expect(out.created.jobs[0]).toMatchObject({ type: "script", state: "scheduled", priority: { number: 2 } });
    expect(out.created.jobs[0].exit_status).toBeUndefined();
    expect(out.listed.map((b: { number: number }) => b.number)).toEqual([number]);
    expect(out.listed_org.map((b: { number: number }) => b.number)).toEqual([number]);
    expect(out.listed_all.map((b: { number: number }) => b.number)).toEqual([number]);
    expect(out.page1).toEqual({ count: 1, next_page: 2 });
    expect(out.got).toMatchObject({ number, id: out.created.id });
    expect(out.finished).toMatchObject({ number: ran.body.number, state: "passed" });
    expect(out.finished.jobs[0]).toMatchObject({
      state: "passed",
      exit_status: 0,
      agent: { id: agent.id, name: "go-agent", hostname: "h", ip_address: "127.0.0.1", user_agent: "ua" },
    });
    expect(out.finished.jobs[0].raw_log_url).toMatch(/\/log\.txt$/);
    expect(out.canceled).toMatchObject({ number, state: "canceled" });
    expect(out.cancel_again_status).toBe(422);
    expect(out.cancel_again_error.length).toBeGreaterThan(0);
    expect(out.rebuilt.number).toBeGreaterThan(number);
    expect(out.rebuilt).toMatchObject({
      state: "scheduled",
      commit: out.created.commit,
      branch: "go-client",
      rebuilt_from: { id: out.created.id, number, url: out.created.url },
    });
    expect(out.missing_build_error).toBe("No build found");
  });
});
