import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { type AgentWorld, agentCall, arrangeAgentWorld, ensure, keepAlive } from "./support/fuzz/agent-world.js";
import { sendRaw } from "./support/fuzz/check.js";
import { type AuthChoice, type BodyChoice, type Operation, operationsOf } from "./support/fuzz/operations.js";
import { formatReport, fuzz } from "./support/fuzz/runner.js";
import { useHints } from "./support/fuzz/schema-arbitrary.js";
import { api, stack, unique } from "./support/stack-env.js";

/**
 * Property-based fuzzing of every agent API operation (/v3) the OpenAPI document declares, against the real stack,
 * as test/fuzz.e2e.test.ts fuzzes the REST API: requests generated from each operation's schemas, valid and made
 * wrong, sent with the credential the operation takes (`x-credential`: the registration token, the agent's access
 * token or its job's token), now and then a wrong one (none, another kind, a revoked one, the wrong scheme), to the
 * run's real job and build, now and then another or a broken id. Every answer must be < 500, a documented status
 * and match its schema; a batch of writes that all failed must leave the job's build, its log and annotations and
 * the agent as they were. A valid request may use the fixtures up (finish the job, stop the agent): the next batch
 * then gets a new agent and job.
 *
 * Seeded (FUZZ_SEED) and bounded in time by its own budget (FUZZ_AGENT_SECONDS, default 25).
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const SECONDS = Number(process.env.FUZZ_AGENT_SECONDS ?? 25);

jest.setTimeout((SECONDS + 120) * 1000);

type Json = Record<string, unknown>;

const KINDS = ["registration", "agent", "job"] as const;

let world: AgentWorld;
let keeper: { stop: () => void } | undefined;
afterAll(() => keeper?.stop());

/** The credential of a kind, as the world has it now. */
function secretOf(kind: string): string {
  if (kind === "registration") return world.registration;
  return kind === "agent" ? world.agentSecret : world.jobSecret;
}

/**
 * Mostly a credential of a kind the operation takes; one time in six a wrong one: none, empty, unknown, the REST
 * API's bearer token, the right secret in the wrong scheme, a kind it does not take, an idle agent's, a used-up one.
 */
function credentials(idleAgent: string) {
  return (op: Operation): fc.Arbitrary<AuthChoice> => {
    const right = op.credential.map((kind) => `Token ${secretOf(kind)}`);
    const own = secretOf(op.credential[0] ?? "agent");
    const wrong: Array<string | null> = [
      null,
      "Token ",
      "Token",
      `Token ${unique("nope")}`,
      `Bearer ${world.org.secret}`,
      `Bearer ${own}`,
      `token ${own}`,
      `Token ${own} ${own}`,
      `Token ${own.slice(0, -1)}`,
      `Token ${idleAgent}`,
      ...KINDS.filter((kind) => !op.credential.includes(kind)).map((kind) => `Token ${secretOf(kind)}`),
      ...world.stale.secrets.slice(-4).map((s) => `Token ${s}`),
    ];
    return fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...right).map((authorization) => ({ authorization, mutations: [] })) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(...wrong).map((authorization) => ({ authorization, mutations: ["credential"] })),
      },
    );
  };
}

/**
 * Log chunks as the agent sends them (gzip as text/plain, with its sequence, offset and uncompressed size), and
 * wrong ones: not gzip, cut short, empty, JSON, or with a size that is not the chunk's; without its own query
 * string, a wrong chunk gets a generated one.
 */
function chunkBodies(allowValid: boolean): fc.Arbitrary<BodyChoice> {
  const gzip = fc.string({ maxLength: 200 }).map((s) => gzipSync(Buffer.from(`${s}\n`)));
  const headers = { "content-encoding": "gzip" };
  const placed = fc
    .tuple(fc.string({ maxLength: 200 }), fc.integer({ min: 1, max: 1000 }), fc.nat(1_000_000))
    .map(([s, sequence, offset]) => {
      const text = Buffer.from(`${s}\n`);
      return { body: gzipSync(text), query: `?sequence=${sequence}&offset=${offset}&size=${text.length}` };
    });
  const wrong = fc.oneof(
    gzip.map((b) => ({ body: b.subarray(0, Math.max(1, b.length - 5)), contentType: "text/plain", headers })),
    fc.string({ maxLength: 50 }).map((s) => ({ body: s, contentType: "text/plain" })),
    fc.constant({ body: Buffer.alloc(0), contentType: "application/octet-stream" }),
    gzip.map((b) => ({ body: b, contentType: "application/x-gzip", headers })),
    fc.constant({ body: '{"chunk":"x"}', contentType: "application/json" }),
    fc.constant({ body: "{", contentType: "application/json" }),
    fc.constant({}),
    placed.map((c) => ({ ...c, query: c.query.replace(/size=\d+/, "size=1"), contentType: "text/plain", headers })),
  );
  const bad = wrong.map((c) => ({ ...c, mutations: ["chunk"] }) as BodyChoice);
  if (!allowValid) return bad;
  const valid = fc
    .tuple(placed, fc.constantFrom("text/plain", "application/octet-stream"))
    .map(([chunk, contentType]) => ({ ...chunk, contentType, headers, mutations: [] }) as BodyChoice);
  return fc.oneof(valid, bad);
}

/** Known-good bodies of the agent API's writes, by operation id. */
function examples(artifactIds: readonly string[]): Record<string, readonly object[]> {
  const now = new Date().toISOString();
  const batchId = crypto.randomUUID();
  const artifact = (path: string) => ({ path, file_size: 1, sha1sum: "0".repeat(40), content_type: "text/plain" });
  return {
    agentRegister: [{ name: unique("fuzzed"), hostname: "fuzz", version: "3.137.0", meta_data: ["queue=nowhere"] }],
    agentHeartbeat: [{ sent_at: now }, {}],
    agentStartJob: [{ started_at: now }, {}],
    agentFinishJob: [
      { exit_status: "0", finished_at: now },
      { exit_status: "1", signal: "SIGTERM", signal_reason: "cancel", chunks_failed_count: 0 },
    ],
    agentHeaderTimes: [{ header_times: { "0": now, "12": now } }],
    agentUpdateJob: [{ timeout_in_minutes: "5" }, { timeout: "10" }],
    agentSetMetaData: [{ key: "fuzz", value: "v" }],
    agentSetMetaDataBatch: [
      {
        items: [
          { key: "fuzz", value: "v" },
          { key: "other", value: "w" },
        ],
      },
    ],
    agentGetMetaDataByJob: [{ key: "fuzz" }],
    agentGetMetaDataByBuild: [{ key: "fuzz" }],
    agentMetaDataExistsByJob: [{ key: "fuzz" }],
    agentMetaDataExistsByBuild: [{ key: "fuzz" }],
    agentAnnotate: [
      { body: "**fuzz**", context: "fuzz", style: "info" },
      { body: "more", context: "fuzz", append: true, priority: 5 },
    ],
    agentPauseSelf: [{ note: "fuzz", timeout_in_minutes: 5 }, {}],
    agentStopSelf: [{ force: false }, { force: true }],
    // Steps of a queue no agent serves: they wait, and no later fixture job is one of them.
    agentUploadPipeline: [
      { uuid: crypto.randomUUID(), pipeline: { steps: [{ command: "echo", agents: { queue: "nowhere" } }] } },
      { uuid: crypto.randomUUID(), pipeline: "steps:\n  - command: echo\n    agents: {queue: nowhere}\n" },
    ],
    // The same batch id again, also with other artifacts: the first batch is the one kept.
    agentCreateArtifacts: [
      { id: batchId, artifacts: [artifact("out/a.txt")] },
      { id: batchId, artifacts: [artifact("out/b.txt"), artifact("out/a.txt")] },
      { id: crypto.randomUUID(), artifacts: [artifact("out/c.txt")] },
    ],
    // The artifacts created so far (read each round): finished, errored, or back to uploading.
    get agentUpdateArtifacts() {
      const id = artifactIds.at(-1) ?? crypto.randomUUID();
      return [
        { artifacts: [{ id, state: "finished" }] },
        {
          artifacts: [
            { id: artifactIds[0] ?? id, state: "error" },
            { id, state: "uploading" },
          ],
        },
      ];
    },
  };
}

it("answers every generated request to every agent API operation with a documented, schema-valid non-5xx", async () => {
  expect(stack.agentUrl).toBe(`${stack.apiUrl}/v3`);
  const doc = await api("/v2/openapi.json");
  expect(doc.status).toBe(200);
  const ops = operationsOf(doc.body, "/v3/");
  expect(ops.length).toBeGreaterThan(25);
  for (const op of ops) expect([op.id, op.credential.length > 0]).toEqual([op.id, true]);

  world = await arrangeAgentWorld();
  keeper = keepAlive(world);
  // An agent holding no job and never offered one: its access token reaches the job routes of no job.
  const idle = await agentCall("POST", "/v3/register", world.registration, {
    name: unique("fuzz-idle"),
    ignore_in_dispatches: true,
  });
  expect(idle.status).toBe(200);
  const idleSecret = String((idle.body as Json).access_token);

  // Path parameters: `id` is the job under /v3/jobs/ and the job's build under /v3/builds/; kept in step with the
  // world when it is arranged again.
  const fixtures: Record<string, string> = { id: "", context: "fuzz" };
  const builds: Record<string, string> = { id: "" };
  const decoys: Record<string, string[]> = { id: [] };
  const sync = () => {
    fixtures.id = world.jobId;
    builds.id = world.buildId;
    // Another kind's id, and jobs and builds used up: real, but not what the credential holds.
    decoys.id = [world.buildId, world.jobId, ...world.stale.jobIds.slice(-2), ...world.stale.buildIds.slice(-2)];
  };
  sync();
  // Ids of artifacts created during the run: state updates name them (a batch id may be one too).
  const artifactIds: string[] = [crypto.randomUUID()];
  useHints({
    id: artifactIds,
    key: ["fuzz", "other", "", "a".repeat(255)],
    uuid: [crypto.randomUUID()],
    state: ["finished", "error", "uploading"],
    exit_status: ["0", "1", "-1", 0, 255, "2147483648", "1.5", "x"],
    started_at: [new Date().toISOString(), "yesterday", "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z"],
    finished_at: [new Date().toISOString(), "not a time", "1970-01-01T00:00:00Z"],
    timeout_in_minutes: ["5", "0", "-1", "1e3", " 7 ", "2147483648", 5, 0, -1],
    context: ["fuzz", "default", "%2E", "..", ""],
    style: ["info", "success", "warning", "error", "bogus"],
    meta_data: [["queue=nowhere"], ["queue="], ["="], ["a=b=c"]],
    pipeline: [
      { steps: [{ command: "echo", agents: { queue: "nowhere" } }] },
      { steps: [{ wait: null }, { block: "ok" }] },
      { steps: "not a list" },
      "steps: [",
      [],
    ],
  });

  const org = `/v2/organizations/${world.org.slug}`;
  const snapshotPaths = () => {
    const build = `${org}/pipelines/${world.buildPipeline}/builds/${world.buildNumber}`;
    return [
      build,
      `${build}/annotations?per_page=100`,
      `${build}/artifacts?per_page=100`,
      `${build}/jobs/${world.jobId}/log`,
      `${org}/agents/${world.agentId}`,
      // The job token still works, and reads the job as it was.
      { url: `/v3/jobs/${world.jobId}`, authorization: `Token ${world.jobSecret}` },
    ];
  };
  // The state compared must be readable (a 401, 403 or 404 before and after proves nothing).
  for (const read of snapshotPaths()) {
    const { url, authorization } = typeof read === "string" ? { url: read, authorization: undefined } : read;
    const res = await sendRaw(stack.apiUrl, world.org.secret, { method: "GET", url, authorization });
    expect([url, res.status]).toEqual([url, 200]);
  }
  const startedAt = Date.now();
  const report = await fuzz(ops, {
    baseUrl: stack.apiUrl,
    token: world.org.secret,
    seed: SEED,
    deadline: startedAt + SECONDS * 1000,
    fixtures,
    fixturesUnder: [["/v3/builds/", builds]],
    decoys,
    examples: examples(artifactIds),
    bodies: { agentLogChunk: chunkBodies },
    credentials: credentials(idleSecret),
    allowValid: () => true,
    freshBaseline: true,
    snapshotPaths,
    onWritten: (req, res) => {
      if (req.op.id !== "agentCreateArtifacts" || artifactIds.length > 50) return;
      const ids = (JSON.parse(res.text) as { artifact_ids?: unknown }).artifact_ids;
      if (Array.isArray(ids)) artifactIds.push(...ids.filter((id): id is string => typeof id === "string"));
    },
    afterBatch: async (_op, succeeded) => {
      if (succeeded && (await ensure(world))) sync();
    },
  });
  const text = formatReport(report);
  console.log(
    `${text}\nfuzz (agent API): ${((Date.now() - startedAt) / 1000).toFixed(1)} s, agent and job arranged ${world.arranged} times`,
  );
  expect(Object.keys(report.perOp).sort()).toEqual(ops.map((op) => op.id).sort());
  expect(report.failures.map((f) => `${f.op}: ${f.problem}\n    ${f.request}`)).toEqual([]);
  // Writes that all failed were followed by a comparison of the state (else "changed nothing" went unchecked).
  expect(report.stateChecks).toBeGreaterThan(0);
});
