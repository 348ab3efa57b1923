import { Role } from "@conveyor/proto/identity";
import { runCiAdmin } from "./support/ci-admin.js";
import { eventually } from "./support/real-agent.js";
import { arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// Pipeline schedules over REST (docs/compatibility.md#pipeline-schedules): CRUD with Buildkite's fields and defaults,
// validation naming the field, the bound per pipeline, a schedule due every minute creating a build with source
// schedule, one on an archived pipeline recording why it could not, and `ci-admin schedule list`.

jest.setTimeout(240_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
let base: string;

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: ["read_pipelines", "write_pipelines", "read_builds"], role: Role.ADMIN });
  clusterId = await arrangeCluster(org.organization.id);
  base = `/v2/organizations/${org.organization.slug}`;
});

async function pipeline(defaultBranch = "trunk"): Promise<string> {
  const res = await send("POST", `${base}/pipelines`, org.secret, {
    name: unique("Scheduled"),
    repository: "git@github.com:acme/app.git",
    cluster_id: clusterId,
    default_branch: defaultBranch,
    configuration: "steps:\n  - command: make\n",
  });
  expect(res.status).toBe(201);
  return res.body.slug;
}

const schedules = (slug: string) => `${base}/pipelines/${slug}/schedules`;

describe("pipeline schedules", () => {
  it("creates, reads, lists, updates and deletes a schedule with Buildkite's fields and defaults", async () => {
    const slug = await pipeline();
    const created = await send("POST", schedules(slug), org.secret, { label: "Nightly", cronline: "@daily" });
    expect(created.status).toBe(201);
    const s: Json = created.body;
    expect(s).toMatchObject({
      label: "Nightly",
      cronline: "@daily",
      message: null,
      commit: "HEAD",
      branch: "trunk",
      env: {},
      enabled: true,
      failed_message: null,
      failed_at: null,
      created_by: { id: org.user.id },
      pipeline: { slug },
    });
    expect(s.url).toBe(`${stack.apiUrl}${schedules(slug)}/${s.id}`);
    expect(Buffer.from(s.graphql_id, "base64").toString()).toBe(`PipelineSchedule---${s.id}`);
    // @daily is midnight UTC: the next one after now.
    const next = new Date(s.next_build_at);
    expect(next.toISOString()).toMatch(/T00:00:00\.000Z$/);
    expect(next.getTime() - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
    expect(next.getTime()).toBeGreaterThan(Date.now());

    expect((await send("GET", `${schedules(slug)}/${s.id}`, org.secret)).body).toEqual(s);
    const listed = await send("GET", schedules(slug), org.secret);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([s]);

    // A label edit leaves the next build time; disabling clears it, enabling works it out again.
    const relabelled = await send("PATCH", `${schedules(slug)}/${s.id}`, org.secret, {
      label: "Nightly build",
      message: "From the schedule",
      env: { NIGHTLY: "1" },
    });
    expect(relabelled.status).toBe(200);
    expect(relabelled.body).toMatchObject({
      label: "Nightly build",
      message: "From the schedule",
      env: { NIGHTLY: "1" },
      next_build_at: s.next_build_at,
    });
    const disabled = await send("PATCH", `${schedules(slug)}/${s.id}`, org.secret, { enabled: false });
    expect(disabled.body).toMatchObject({ enabled: false, next_build_at: null });
    const hourly = await send("PATCH", `${schedules(slug)}/${s.id}`, org.secret, {
      enabled: true,
      cronline: "@hourly",
    });
    expect(hourly.body.next_build_at).toMatch(/:00:00\.000Z$/);

    const deleted = await send("DELETE", `${schedules(slug)}/${s.id}`, org.secret);
    expect(deleted.status).toBe(204);
    const gone = await send("GET", `${schedules(slug)}/${s.id}`, org.secret);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ message: "No pipeline schedule found" });
    expect((await send("GET", schedules(slug), org.secret)).body).toEqual([]);
  });

  it("takes a time zone or an offset after the five fields", async () => {
    const slug = await pipeline();
    const berlin = await send("POST", schedules(slug), org.secret, {
      label: "Berlin mornings",
      cronline: "0 9 * * * Europe/Berlin",
    });
    expect(berlin.status).toBe(201);
    // 09:00 in Berlin is 08:00 UTC in winter and 07:00 UTC in summer.
    expect(berlin.body.next_build_at).toMatch(/T0[78]:00:00\.000Z$/);
    const offset = await send("POST", schedules(slug), org.secret, { label: "India", cronline: "30 9 * * * +05:30" });
    expect(offset.body.next_build_at).toMatch(/T04:00:00\.000Z$/);
  });

  it.each([
    [{ label: "x", cronline: "every day" }, "cronline", "must be a shorthand such as @daily or five cron fields"],
    [{ label: "x", cronline: "61 * * * *" }, "cronline", "is not a valid cron line"],
    [{ label: "x", cronline: "0 0 * * * Mars/Olympus" }, "cronline", "has an unknown time zone: Mars/Olympus"],
    [{ label: "x", cronline: "0 0 31 2 *" }, "cronline", "never comes round"],
    [{ label: "x" }, "cronline", "can't be blank"],
    [{ cronline: "@daily" }, "label", "can't be blank"],
    [{ label: "x", cronline: "@daily", env: { "A=B": "1" } }, "env", ""],
  ])("refuses %j with a 422 naming %s", async (body, field, code) => {
    const slug = await pipeline();
    const res = await send("POST", schedules(slug), org.secret, body);
    expect(res.status).toBe(422);
    expect(res.body.message).toBe("Validation Failed");
    expect(res.body.errors).toEqual([{ field: expect.stringContaining(field), code: expect.stringContaining(code) }]);
  });

  it("refuses a bad cron line in an update too, and keeps the schedule as it was", async () => {
    const slug = await pipeline();
    const s = (await send("POST", schedules(slug), org.secret, { label: "x", cronline: "@daily" })).body;
    const res = await send("PATCH", `${schedules(slug)}/${s.id}`, org.secret, { cronline: "@sometimes" });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ field: "cronline", code: expect.stringContaining("@sometimes") }]);
    expect((await send("GET", `${schedules(slug)}/${s.id}`, org.secret)).body).toEqual(s);
  });

  it("holds 50 schedules per pipeline", async () => {
    const slug = await pipeline();
    for (let i = 0; i < 50; i++) {
      const res = await send("POST", schedules(slug), org.secret, { label: `s${i}`, cronline: "@yearly" });
      expect(res.status).toBe(201);
    }
    const refused = await send("POST", schedules(slug), org.secret, { label: "one more", cronline: "@yearly" });
    expect(refused.status).toBe(422);
    expect(refused.body).toEqual({ message: "A pipeline can have at most 50 schedules." });
    const page = await send("GET", `${schedules(slug)}?per_page=20&page=3`, org.secret);
    expect(page.body.map((s: Json) => s.label)).toEqual(Array.from({ length: 10 }, (_, i) => `s${i + 40}`));
  });

  it("builds a due schedule with source schedule, and records why an archived pipeline's schedule cannot", async () => {
    const [live, archived] = await Promise.all([pipeline("main"), pipeline("main")]);
    const every = { cronline: "* * * * *", branch: "main", message: "Every minute", env: { FROM: "schedule" } };
    const s = (await send("POST", schedules(live), org.secret, { label: "Minutely", ...every })).body;
    const t = (await send("POST", schedules(archived), org.secret, { label: "Archived", ...every })).body;
    expect((await send("POST", `${base}/pipelines/${archived}/archive`, org.secret)).status).toBe(200);

    // Due within a minute, handled within a tick (SCHEDULE_TICK_S, 10 s) of that.
    const build = await eventually(
      "a scheduled build",
      async () => (await send("GET", `${base}/pipelines/${live}/builds`, org.secret)).body[0],
      100_000,
    );
    expect(build).toMatchObject({
      source: "schedule",
      commit: "HEAD",
      branch: "main",
      message: "Every minute",
      env: { FROM: "schedule" },
      creator: null,
    });
    const after = (await send("GET", `${schedules(live)}/${s.id}`, org.secret)).body;
    expect(new Date(after.next_build_at).getTime()).toBeGreaterThan(new Date(s.next_build_at).getTime());
    expect(after.failed_message).toBeNull();

    const failed = await eventually(
      "the archived pipeline's schedule to record its failure",
      async () => {
        const got = (await send("GET", `${schedules(archived)}/${t.id}`, org.secret)).body;
        return got.failed_message ? got : undefined;
      },
      100_000,
    );
    expect(failed.failed_message).toBe("Pipeline is archived: unarchive it to build on schedule again.");
    expect(new Date(failed.failed_at).getTime()).toBeGreaterThanOrEqual(new Date(t.next_build_at).getTime());
    expect((await send("GET", `${base}/pipelines/${archived}/builds`, org.secret)).body).toEqual([]);

    // Exactly one build per tick: stopped now, the pipeline has as many builds as ticks went by, each a minute apart.
    await send("PATCH", `${schedules(live)}/${s.id}`, org.secret, { enabled: false });
    const builds: Json[] = (await send("GET", `${base}/pipelines/${live}/builds`, org.secret)).body;
    const minutes = builds.map((b) => Math.floor(new Date(b.created_at).getTime() / 60_000));
    expect(new Set(minutes).size).toBe(builds.length);
  });

  it("lists a pipeline's schedules with ci-admin", async () => {
    const slug = await pipeline();
    const s = (await send("POST", schedules(slug), org.secret, { label: "From the CLI", cronline: "@weekly" })).body;
    const res = await runCiAdmin(["schedule", "list", "--org", org.organization.slug, "--pipeline", slug]);
    expect(res.stderr).toBe("");
    expect(res.json).toEqual([
      expect.objectContaining({ id: s.id, label: "From the CLI", cronline: "@weekly", enabled: true }),
    ]);
  });
});
