import { type Case, controls, type NotApplicable, restMatrix } from "./support/access-matrix-cases.js";
import {
  countBy,
  type Operation,
  operationsOf,
  pooled,
  problemWith,
  REST_KINDS,
  request,
} from "./support/access-matrix-routes.js";
import { agentCases, agentJobCases, snapshot } from "./support/access-matrix-state.js";
import { arrangeWorld, type World } from "./support/access-matrix-world.js";
import { api } from "./support/stack-env.js";

// The generated access matrix: every operation of the served OpenAPI document × every kind of refusal — no token or
// an unknown one (401), a token without the operation's scope (403 naming it), another organization's token (404), a
// path parameter naming a real resource under another parent (404), and organization members the access policy
// refuses (404 where the resource is hidden from them, 403 where it is not). Every (operation, kind) either runs or
// is listed as not applicable with its reason; a test fails if any is neither. Refused writes carry bodies that would
// be valid, and must change nothing. The agent API (/v3) gets its own small matrix of missing and wrong credentials.

jest.setTimeout(180_000);

const WIDTH = 8;

let world: World;
let rest: Operation[];
let agent: Operation[];
let matrix: { cases: Case[]; skipped: NotApplicable[] };
let before: Record<string, unknown>;

beforeAll(async () => {
  const doc = await api("/v2/openapi.json");
  expect(doc.status).toBe(200);
  const ops = operationsOf(doc.body);
  rest = ops.filter((op) => op.path.startsWith("/v2"));
  agent = ops.filter((op) => op.path.startsWith("/v3"));
  world = await arrangeWorld();
  matrix = restMatrix(world, rest);
  before = await snapshot(world);
});

/** Runs cases a few at a time and returns one line per case whose answer is wrong. */
async function failuresOf(cases: Case[]): Promise<string[]> {
  const problems = await pooled(cases, WIDTH, async (c) => {
    const answer = await request(c.method, c.path, c.authorization, c.body);
    const problem = problemWith(answer, c.expect, c.method);
    return problem && `${c.kind} ${c.operationId} ${c.method} ${c.path} (${c.note}): ${problem}`;
  });
  return problems.filter((p): p is string => p !== undefined);
}

/** Prints what ran and what did not, by kind. */
function report(title: string, cases: Case[], skipped: NotApplicable[] = []) {
  const ran = countBy(cases, (c) => c.kind);
  const notApplicable = countBy(skipped, (s) => s.kind);
  console.log(
    `${title}: ${cases.length} cases ran ${JSON.stringify(ran)}; ${skipped.length} not applicable ${JSON.stringify(notApplicable)}`,
  );
}

it("reads the route table from the served document: /v2 operations with x-scope, /v3 ones with x-credential", () => {
  expect(rest.length).toBeGreaterThan(50);
  expect(agent.length).toBeGreaterThan(20);
  for (const op of rest.filter((o) => !o.public))
    expect([op.operationId, op.scope === undefined]).toEqual([op.operationId, false]);
  for (const op of agent) expect([op.operationId, (op.credential?.length ?? 0) > 0]).toEqual([op.operationId, true]);
});

it("covers every (operation, kind) of /v2 with cases or a stated reason", () => {
  const covered = new Set(matrix.cases.map((c) => `${c.operationId} ${c.kind}`));
  const listed = new Map(matrix.skipped.map((s) => [`${s.operationId} ${s.kind}`, s.reason]));
  const missing = rest.flatMap((op) =>
    REST_KINDS.map((kind) => `${op.operationId} ${kind}`).filter((key) => !covered.has(key) && !listed.has(key)),
  );
  expect(missing).toEqual([]);
  for (const [key, reason] of listed) expect([key, covered.has(key), reason.length > 0]).toEqual([key, false, true]);
  report("not applicable (listed)", [], matrix.skipped);
  console.log(matrix.skipped.map((s) => `  ${s.operationId} × ${s.kind}: ${s.reason}`).join("\n"));
});

it("answers the owner's reads of every fixture path (so that a 404 below means misplaced, not missing)", async () => {
  const cases = controls(world, rest);
  report("controls", cases);
  expect(cases.length).toBeGreaterThan(0);
  expect(await failuresOf(cases)).toEqual([]);
});

describe.each(REST_KINDS)("%s", (kind) => {
  it("refuses every operation as the access policy says, with a { message } body", async () => {
    const cases = matrix.cases.filter((c) => c.kind === kind);
    report(
      `REST ${kind}`,
      cases,
      matrix.skipped.filter((s) => s.kind === kind),
    );
    expect(cases.length).toBeGreaterThan(0);
    expect(await failuresOf(cases)).toEqual([]);
  });
});

it("refuses every agent API operation without a credential or with one of the wrong kind (401)", async () => {
  const cases = agentCases(world, agent);
  report("agent API", cases);
  expect(cases.length).toBeGreaterThan(0);
  expect(await failuresOf(cases)).toEqual([]);
});

it("answers agents that hold no job there 404 on every agent API job and build route", async () => {
  const cases = agentJobCases(world, agent);
  report("agent API, jobs held by no one asking", cases);
  expect(cases.length).toBeGreaterThan(0);
  expect(await failuresOf(cases)).toEqual([]);
});

it("lists what names no organization only for the token's organizations (their foreign case)", async () => {
  const { a, b, limitedToB } = world;
  for (const secret of [b.adminSecret, limitedToB]) {
    const orgs = await api("/v2/organizations", secret);
    expect([orgs.status, orgs.body.map((o: { slug: string }) => o.slug)]).toEqual([200, [b.slug]]);
    const builds = await api("/v2/builds?per_page=100", secret);
    expect(builds.status).toBe(200);
    expect(builds.body.filter((x: { pipeline: { id: string } }) => x.pipeline.id === a.pipeline.id)).toEqual([]);
    // B's admin sees B's build; A's admin is a member of B in no team, so sees none of B's pipelines.
    const seesB = builds.body.some((x: { id: string }) => x.id === b.build.id);
    expect([secret === limitedToB ? "limited" : "B admin", seesB]).toEqual(
      secret === limitedToB ? ["limited", false] : ["B admin", true],
    );
  }
});

it("changed nothing: every refused write left what it named as it was", async () => {
  // What is compared was readable: a 404 before and after would prove nothing.
  const unreadable = Object.entries(before).filter(([what, reading]) =>
    what === "owner tokens"
      ? (reading as number[]).some((status) => status !== 200)
      : (reading as [number, unknown])[0] !== 200,
  );
  expect(unreadable).toEqual([]);
  const after = await snapshot(world);
  expect(after).toEqual(before);
  report("REST total", matrix.cases, matrix.skipped);
});
