import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import { arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// Builds test/go-client/schedules-check (the official go-buildkite client, v4) into the tool cache and runs it against
// the stack: PipelineSchedules' Create, List, Get, Update (PATCH) and Delete must decode, and a bad cron line must
// come back as the client's ErrorResponse with its 422.
const cacheDir = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
const binary = join(cacheDir, "bin", "go-client-check", "schedules-check");
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

beforeAll(() => {
  mkdirSync(join(cacheDir, "bin", "go-client-check"), { recursive: true });
  execFileSync("go", ["build", "-o", binary, "./schedules-check"], {
    cwd: join(process.cwd(), "test/go-client"),
    stdio: "inherit",
  });
}, 300_000);

describe("go-buildkite decodes our pipeline schedule routes", () => {
  it("creates, lists, gets, updates and deletes a schedule", async () => {
    const org = await arrangeOrgUser({ scopes: ["read_pipelines", "write_pipelines"], role: Role.ADMIN });
    const res = await send("POST", `/v2/organizations/${org.organization.slug}/pipelines`, org.secret, {
      name: unique("Go schedules"),
      repository: "git@github.com:acme/app.git",
      cluster_id: await arrangeCluster(org.organization.id),
      configuration: "steps:\n  - command: make\n",
    });
    expect(res.status).toBe(201);
    const out = JSON.parse(
      execFileSync(binary, [], {
        env: {
          ...process.env,
          CONVEYOR_API_URL: stack.apiUrl,
          CONVEYOR_API_TOKEN: org.secret,
          CONVEYOR_ORG_SLUG: org.organization.slug,
          CONVEYOR_PIPELINE: res.body.slug,
        },
        encoding: "utf8",
      }),
    );
    expect(out.created).toMatchObject({
      label: "Nightly",
      cronline: "0 2 * * * Europe/Berlin",
      message: "From go-buildkite",
      commit: "HEAD",
      branch: "main",
      env: { NIGHTLY: "1" },
      enabled: true,
      created_by: { id: org.user.id },
      pipeline: { id: res.body.id, slug: res.body.slug },
    });
    expect(out.created.next_build_at).toMatch(ISO);
    expect(out.created.created_at).toMatch(ISO);
    expect(out.listed).toEqual([out.created]);
    expect(out.got).toEqual(out.created);
    expect(out.updated).toMatchObject({ id: out.created.id, label: "Nightly build", enabled: false });
    // Disabled: no next build, which go-buildkite leaves out.
    expect(out.updated.next_build_at).toBeUndefined();
    expect(out.bad_cronline.status).toBe(422);
    expect(out.bad_cronline.message).toBe("Validation Failed");
    expect(out.deleted_status).toBe(204);
    expect(out.after_delete).toEqual([]);
    expect(out.missing).toEqual({ status: 404, message: "No pipeline schedule found" });
  });
});
