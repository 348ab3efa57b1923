import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import { api, arrangeCluster, arrangeOrgUser, builds, send, stack, unique } from "./support/stack-env.js";

// Builds test/go-client/rest-surface-check (the official go-buildkite client, v4) into the tool cache and runs it
// against the stack (issue 35 item 3): the current user, meta, emojis, the rate limit, annotations made, listed and
// deleted over REST, a job reprioritized (which dispatch then lists first) and the calling token revoked, after which
// it no longer works.
const cacheDir = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
const binary = join(cacheDir, "bin", "go-client-check", "rest-surface-check");
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

beforeAll(() => {
  mkdirSync(join(cacheDir, "bin", "go-client-check"), { recursive: true });
  execFileSync("go", ["build", "-o", binary, "./rest-surface-check"], {
    cwd: join(process.cwd(), "test/go-client"),
    stdio: "inherit",
  });
}, 300_000);

describe("go-buildkite decodes the user, meta, emojis, rate limit, annotation, reprioritize and revoke routes", () => {
  it("calls each and decodes its answer; the revoked token stops working at once", async () => {
    const scopes = [
      "read_user",
      "read_accounts",
      "read_pipelines",
      "write_pipelines",
      "read_builds",
      "write_builds",
      "read_clusters",
      "write_clusters",
    ];
    const org = await arrangeOrgUser({ scopes, role: Role.ADMIN });
    const slug = org.organization.slug;
    const pipeline = await send("POST", `/v2/organizations/${slug}/pipelines`, org.secret, {
      name: unique("Go surface"),
      repository: "git@github.com:acme/app.git",
      cluster_id: await arrangeCluster(org.organization.id),
      configuration: "steps:\n  - command: make a\n  - command: make b\n",
    });
    expect(pipeline.status).toBe(201);
    const build = await send("POST", `/v2/organizations/${slug}/pipelines/${pipeline.body.slug}/builds`, org.secret, {
      commit: "HEAD",
      branch: "main",
    });
    expect(build.status).toBe(201);
    const [first, second] = build.body.jobs.map((j: { id: string }) => j.id) as [string, string];

    const out = JSON.parse(
      execFileSync(binary, [], {
        env: {
          ...process.env,
          CONVEYOR_API_URL: stack.apiUrl,
          CONVEYOR_API_TOKEN: org.secret,
          CONVEYOR_ORG_SLUG: slug,
          CHECK_PIPELINE: pipeline.body.slug,
          CHECK_BUILD: String(build.body.number),
          CHECK_JOB: second,
        },
        encoding: "utf8",
      }),
    );

    expect(out.user).toMatchObject({ id: org.user.id, name: org.user.name, email: org.user.email });
    expect(out.user.created_at).toMatch(ISO);
    expect(out.meta).toEqual({});
    expect(out.emojis).toEqual([]);
    // The stack's limit (RATE_LIMIT_PER_MINUTE), as every answer's header says; at least the two creates counted.
    const limit = Number(build.headers.get("ratelimit-limit"));
    expect(limit).toBeGreaterThan(0);
    expect(out.rate_limit.scopes.rest).toMatchObject({ limit, enforced: true });
    expect(out.rate_limit.scopes.rest.current).toBeGreaterThanOrEqual(3);
    expect(out.rate_limit.scopes.rest.reset_at).toMatch(ISO);

    expect(out.created).toMatchObject({ context: "go", style: "info", scope: "build", priority: 8 });
    expect(out.created.body_html).toContain("<strong>Hello</strong>");
    expect(out.appended).toMatchObject({ id: out.created.id, style: "info", priority: 8 });
    expect(out.appended.body_html).toContain("and again");
    expect(out.created_for_job).toMatchObject({ context: "job-go", style: "warning", scope: "job" });
    expect(out.listed.map((a: { id: string }) => a.id)).toEqual([out.created.id]);
    expect(out.listed_for_job.map((a: { id: string }) => a.id)).toEqual([out.created_for_job.id]);
    expect([out.delete_status, out.delete_job_status]).toEqual([204, 204]);
    expect(out.after_delete ?? []).toEqual([]);

    expect(out.reprioritized).toMatchObject({ id: second, priority: { number: 42 } });
    expect(out.bad_priority.status).toBe(422);
    // Dispatch lists the reprioritized job before the build's first one.
    const waiting = (await builds.listDispatchableJobs({})).jobs
      .map((j) => j.id)
      .filter((id) => id === first || id === second);
    expect(waiting).toEqual([second, first]);

    expect(out.cluster_created).toMatchObject({ name: "Go cluster", description: "from go" });
    expect(out.cluster_created.created_at).toMatch(ISO);
    expect(out.clusters.map((c: { id: string }) => c.id)).toContain(out.cluster_created.id);
    expect(out.cluster_got).toEqual(out.cluster_created);
    expect(out.cluster_updated).toMatchObject({
      id: out.cluster_created.id,
      name: "Go cluster",
      description: "changed by go",
    });
    expect(out.token_created.token).toMatch(/.{20,}/);
    expect(out.token_created).toMatchObject({ description: "go token" });
    expect(out.tokens).toEqual([{ ...out.token_created, token: undefined }].map((t) => JSON.parse(JSON.stringify(t))));
    expect(out.token_got).toEqual(out.tokens[0]);
    expect(out.token_deleted_status).toBe(204);
    expect(out.tokens_after ?? []).toEqual([]);
    // The revoked registration token registers no agent.
    const register = await fetch(`${stack.agentUrl}/register`, {
      method: "POST",
      headers: { authorization: `Token ${out.token_created.token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: unique("go-agent"), hostname: "go", version: "3.137.0" }),
    });
    expect(register.status).toBe(401);

    expect(out.revoke_status).toBe(204);
    expect(out.after_revoke.status).toBe(401);
    expect((await api("/v2/user", org.secret)).status).toBe(401);
  });
});
