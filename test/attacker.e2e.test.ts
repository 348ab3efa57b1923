import { randomBytes, randomUUID } from "node:crypto";
import { Role } from "@conveyor/proto/identity";
import { api, arrangeCluster, arrangeMember, arrangeOrgUser, send, unique } from "./support/stack-env.js";
import { arrangeTeam } from "./support/teams-env.js";

// The attacks issue 13 lists as "found when tried as an attacker", one regression test each, on the real stack.

const SCOPES = [
  "read_builds",
  "write_builds",
  "read_pipelines",
  "write_pipelines",
  "read_organizations",
  "view_teams",
  "write_teams",
  "read_agents",
];
const STEPS = "steps:\n  - command: make test\n";
// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field.
type Json = any;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
const base = () => `/v2/organizations/${org.organization.slug}`;
const sha = () => randomBytes(20).toString("hex");

async function pipeline(): Promise<Json> {
  const res = await send("POST", `${base()}/pipelines`, org.secret, {
    name: unique("Pipe"),
    repository: "git@github.com:acme/web.git",
    cluster_id: clusterId,
    configuration: STEPS,
  });
  expect(res.status).toBe(201);
  return res.body;
}

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN, teamsEnabled: true });
  clusterId = await arrangeCluster(org.organization.id);
});

it("answers a page number beyond 32 bits with 400 on every paged list, never 500", async () => {
  const p = await pipeline();
  const team = await arrangeTeam(org.organization.id);
  const lists = [
    "/v2/builds",
    `${base()}/builds`,
    `${base()}/pipelines`,
    `${base()}/pipelines/${p.slug}/builds`,
    `${base()}/members`,
    `${base()}/teams/${team.id}/members`,
    `${base()}/agents`,
  ];
  for (const path of lists) {
    for (const page of ["2147483648", "99999999999999999999", "-1", "1e3"]) {
      const res = await api(`${path}?page=${page}`, org.secret);
      expect([path, page, res.status]).toEqual([path, page, 400]);
      expect(typeof res.body.message).toBe("string");
    }
  }
});

it("answers concurrent renames to one name with 200 for one and 422 for the others, never 500", async () => {
  const pipelines = await Promise.all([pipeline(), pipeline(), pipeline(), pipeline()]);
  const name = unique("Same");
  const answers = await Promise.all(
    pipelines.map((p) => send("PATCH", `${base()}/pipelines/${p.slug}`, org.secret, { name })),
  );
  const statuses = answers.map((a) => a.status).sort();
  expect(statuses).toEqual([200, 422, 422, 422]);
});

it("admits no build after an archive was acknowledged, even in a race with it", async () => {
  const p = await pipeline();
  const path = `${base()}/pipelines/${p.slug}`;
  const create = () => send("POST", `${path}/builds`, org.secret, { commit: sha(), branch: "main" });
  // Builds keep being created, four at a time, while the pipeline is archived.
  let archivedAnswered = Number.POSITIVE_INFINITY;
  const answers: Array<Awaited<ReturnType<typeof create>>> = [];
  const workers = Array.from({ length: 4 }, async () => {
    while (answers.length < 40 && Date.now() < archivedAnswered + 300) answers.push(await create());
  });
  // The archive races creates under way: it goes once one create has been admitted (however slow the machine).
  const until = Date.now() + 10_000;
  while (!answers.some((a) => a.status === 201) && Date.now() < until)
    await new Promise((resolve) => setTimeout(resolve, 10));
  const archived = await send("POST", `${path}/archive`, org.secret);
  archivedAnswered = Date.now();
  expect(archived.status).toBe(200);
  await Promise.all(workers);
  expect([...new Set(answers.map((a) => a.status))].sort()).toEqual(expect.arrayContaining([201]));
  for (const a of answers) {
    expect([201, 422]).toContain(a.status);
    // A build answered 201 was admitted before the archive completed.
    if (a.status === 201) expect(Date.parse(a.body.created_at)).toBeLessThanOrEqual(archivedAnswered);
  }
  expect((await create()).status).toBe(422);
});

it("drops the builds of a deleted pipeline from every list (no build with pipeline null)", async () => {
  const p = await pipeline();
  const build = await send("POST", `${base()}/pipelines/${p.slug}/builds`, org.secret, {
    commit: sha(),
    branch: "main",
  });
  expect(build.status).toBe(201);
  // The list is read (and kept by the builds service's read cache) before the deletion: the removal must reach it.
  const listed = async () =>
    (await api(`${base()}/builds?per_page=100&exclude_pipeline=true`, org.secret)).body.some(
      (b: Json) => b.id === build.body.id,
    );
  expect(await listed()).toBe(true);
  expect((await send("DELETE", `${base()}/pipelines/${p.slug}`, org.secret)).status).toBe(204);
  for (const path of ["/v2/builds?per_page=100", `${base()}/builds?per_page=100`]) {
    const list = await api(path, org.secret);
    expect(list.status).toBe(200);
    expect(list.body.filter((b: Json) => b.id === build.body.id)).toEqual([]);
    expect(list.body.filter((b: Json) => b.pipeline === null)).toEqual([]);
  }
  // The builds service removes them on the deletion's event: soon they are gone from every answer.
  const deadline = Date.now() + 15_000;
  while ((await listed()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  expect(await listed()).toBe(false);
});

it.each([
  ["an empty env key", { env: { "": "x" } }],
  ["an env key with =", { env: { "A=B": "x" } }],
  ["an env key with NUL", { env: { "A\u0000": "x" } }],
  ["a branch with NUL", { branch: "ma\u0000in" }],
  ["a branch with a control character", { branch: "ma\u001bin" }],
  ["a pull request id beyond 2^53", { pull_request_id: 2 ** 53 + 2 }],
])("refuses a build with %s (422, nothing created)", async (_what, extra) => {
  const p = await pipeline();
  const path = `${base()}/pipelines/${p.slug}/builds`;
  const res = await send("POST", path, org.secret, { commit: sha(), branch: "main", ...extra });
  expect(res.status).toBe(422);
  expect(res.body.message).toBe("Validation Failed");
  expect((await api(path, org.secret)).body).toEqual([]);
});

it.each([
  ["a name with NUL", { name: "Web\u0000" }],
  ["a name with a control character", { name: "Web\u0007" }],
  ["a repository with NUL", { repository: "git@github.com:acme/web.git\u0000" }],
])("refuses a pipeline with %s (422, nothing created)", async (_what, extra) => {
  const before = (await api(`${base()}/pipelines?per_page=100`, org.secret)).body.length;
  const res = await send("POST", `${base()}/pipelines`, org.secret, {
    name: unique("Pipe"),
    repository: "git@github.com:acme/web.git",
    cluster_id: clusterId,
    configuration: STEPS,
    ...extra,
  });
  expect(res.status).toBe(422);
  expect((await api(`${base()}/pipelines?per_page=100`, org.secret)).body.length).toBe(before);
});

it("answers adding another organization's user to a team exactly as adding an unknown user (no existence oracle)", async () => {
  const team = await arrangeTeam(org.organization.id);
  const stranger = await arrangeOrgUser({ scopes: ["read_builds"] });
  const member = await arrangeMember(org.organization.id, Role.MEMBER, ["read_builds"]);
  const path = `${base()}/teams/${team.id}/members`;
  const foreign = await send("POST", path, org.secret, { user_id: stranger.user.id, role: "member" });
  const unknown = await send("POST", path, org.secret, { user_id: randomUUID(), role: "member" });
  expect(foreign.status).toBe(unknown.status);
  expect(foreign.body).toEqual(unknown.body);
  expect((await send("POST", path, org.secret, { user_id: member.user?.id, role: "member" })).status).toBe(201);
});

it("refuses deeply nested pipeline YAML fast with its own reason, not the engine's", async () => {
  const started = Date.now();
  const res = await send("POST", `${base()}/pipelines`, org.secret, {
    name: unique("Deep"),
    repository: "git@github.com:acme/web.git",
    cluster_id: clusterId,
    configuration: `steps: ${"[".repeat(20_000)}${"]".repeat(20_000)}`,
  });
  expect(res.status).toBe(422);
  expect(res.text).not.toMatch(/call stack/i);
  expect(Date.now() - started).toBeLessThan(5_000);
});
