import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { AgentsService } from "@conveyor/proto/agents";
import { IdentityService, Role } from "@conveyor/proto/identity";
import { createServiceClient } from "@conveyor/runtime";
import { type Document, MongoClient } from "mongodb";
import { bootstrapStack } from "../bootstrap/bootstrap.js";
import { type Env, envValue } from "../host/paths.js";
import { startStack } from "../stack/stack.js";
import { median } from "./bench-stats.js";

/**
 * `npm run bench:builds`: the cost of one page of builds when a pipeline (and its organization) holds 100 builds
 * versus 100,000, measured in the same run on one stack. Two organizations each get one pipeline with a few real
 * builds made through the REST API; their stored build and job documents are then cloned directly in the builds
 * database up to the target counts (going through the API for 100,000 builds would take an hour). Each list route is
 * requested alternately against the small and the large organization, and the medians are compared; then builds are
 * created on both pipelines in alternating rounds and the time per create is compared the same way.
 */

const SMALL = 100;
const DEFAULT_LARGE = 100_000;
const SAMPLES = 7;
const CREATES = 200;
const CREATE_ROUNDS = 4;
const CREATE_CONCURRENCY = 10;

interface Side {
  label: string;
  orgSlug: string;
  pipelineSlug: string;
  count: number;
}

const ROUTES: Array<{ name: string; path: (s: Side) => string }> = [
  { name: "pipeline builds, page 1", path: (s) => `/v2/organizations/${s.orgSlug}/pipelines/${s.pipelineSlug}/builds` },
  {
    name: "pipeline builds, page 3",
    path: (s) => `/v2/organizations/${s.orgSlug}/pipelines/${s.pipelineSlug}/builds?page=3`,
  },
  {
    name: "pipeline builds ?branch=main",
    path: (s) => `/v2/organizations/${s.orgSlug}/pipelines/${s.pipelineSlug}/builds?branch=main`,
  },
  { name: "org builds ?state=passed", path: (s) => `/v2/organizations/${s.orgSlug}/builds?state=passed` },
  { name: "org builds, page 1", path: (s) => `/v2/organizations/${s.orgSlug}/builds` },
];

async function json(res: Response) {
  const text = await res.text();
  if (!res.ok) throw new Error(`${res.status} ${res.url}: ${text}`);
  return JSON.parse(text);
}

/** Runs the benchmark and prints the table; returns the process exit code. */
export async function runBuildsBench(repoRoot: string, env: Env = process.env): Promise<number> {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const large = Number(envValue(env, "BENCH_BUILDS") ?? DEFAULT_LARGE);
  const dataDir = mkdtempSync(join(tmpdir(), "conveyor-bench-builds-"));
  say("starting an isolated stack on free ports…");
  const stack = await startStack({
    repoRoot,
    dataDir,
    ports: "free",
    // Thousands of requests to one organization: no rate limit on the benchmark's own stack.
    env: { ...env, LOG_LEVEL: envValue(env, "LOG_LEVEL") ?? "warn", RATE_LIMIT_PER_MINUTE: "0" },
    log: (l) => say(`  ${l}`),
  });
  const mongo = await new MongoClient(stack.info.mongodbUrl).connect();
  try {
    const { credentials } = await bootstrapStack(stack.info, { env });
    const token = credentials.apiToken.secret;
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`${stack.info.apiUrl}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...(init.headers ?? {}) },
      });
    const identity = createServiceClient(IdentityService, stack.info.serviceUrls.identity);
    const agents = createServiceClient(AgentsService, stack.info.serviceUrls.agents);

    const sides: Side[] = [];
    for (const [label, count] of [
      ["small", SMALL],
      ["large", large],
    ] as const) {
      const { organization } = await identity.createOrganization({ name: `Bench ${label}` });
      if (!organization) throw new Error("no organization");
      await identity.addMember({ organization: organization.id, userId: credentials.user.id, role: Role.ADMIN });
      const { cluster } = await agents.createCluster({ organizationId: organization.id, name: "bench" });
      const pipeline = await json(
        await api(`/v2/organizations/${organization.slug}/pipelines`, {
          method: "POST",
          body: JSON.stringify({
            name: `Bench ${label}`,
            repository: "https://example.com/bench.git",
            cluster_id: cluster?.id,
            configuration: "steps:\n  - command: make test\n  - wait\n  - command: make deploy\n",
          }),
        }),
      );
      for (const branch of ["main", "dev", "main"]) {
        await json(
          await api(`/v2/organizations/${organization.slug}/pipelines/${pipeline.slug}/builds`, {
            method: "POST",
            body: JSON.stringify({ commit: "0123456789abcdef0123456789abcdef01234567", branch, message: "bench" }),
          }),
        );
      }
      sides.push({ label, orgSlug: organization.slug, pipelineSlug: pipeline.slug, count });
      say(`seeding ${count.toLocaleString("en-US")} builds into ${organization.slug}…`);
      const started = Date.now();
      await seed(mongo, pipeline.id, count);
      say(`  seeded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }

    say(`\n${SAMPLES} requests per route and side, alternating small and large\n`);
    say(
      `${"route".padEnd(32)} ${`${SMALL} builds`.padStart(12)} ${`${large} builds`.padStart(14)} ${"large/small".padStart(12)}`,
    );
    const rows = [];
    for (const route of ROUTES) {
      const times: Record<string, number[]> = { small: [], large: [] };
      for (const side of sides) await json(await api(route.path(side))); // warm-up
      for (let i = 0; i < SAMPLES; i++) {
        for (const side of sides) {
          const t0 = performance.now();
          const body = await json(await api(route.path(side)));
          times[side.label]?.push(performance.now() - t0);
          if (!Array.isArray(body) || body.length === 0) throw new Error(`${route.name}: empty page for ${side.label}`);
        }
      }
      const small = median(times.small ?? []);
      const big = median(times.large ?? []);
      rows.push({ route: route.name, smallMs: small, largeMs: big, ratio: big / small });
      say(
        `${route.name.padEnd(32)} ${`${small.toFixed(1)} ms`.padStart(12)} ${`${big.toFixed(1)} ms`.padStart(14)} ${`${(big / small).toFixed(2)}×`.padStart(12)}`,
      );
    }
    // Creating builds: CREATES per side, CREATE_CONCURRENCY at a time, in alternating rounds; the time per create
    // must not grow with the history either (a create recounts nothing on its request path).
    const createMs: Record<string, number[]> = { small: [], large: [] };
    for (let round = 0; round < CREATE_ROUNDS; round++) {
      for (const side of sides) {
        const t0 = performance.now();
        await createBuilds(api, side, CREATES / CREATE_ROUNDS);
        createMs[side.label]?.push((performance.now() - t0) / (CREATES / CREATE_ROUNDS));
      }
    }
    const smallCreate = median(createMs.small ?? []);
    const largeCreate = median(createMs.large ?? []);
    const createRoute = `POST builds (${CREATE_CONCURRENCY} at a time)`;
    rows.push({ route: createRoute, smallMs: smallCreate, largeMs: largeCreate, ratio: largeCreate / smallCreate });
    say(
      `${createRoute.padEnd(32)} ${`${smallCreate.toFixed(1)} ms`.padStart(12)} ${`${largeCreate.toFixed(1)} ms`.padStart(14)} ${`${(largeCreate / smallCreate).toFixed(2)}×`.padStart(12)}`,
    );
    say(`  (time per create: ${CREATES} creates per side in ${CREATE_ROUNDS} alternating rounds)`);

    const out = join(repoRoot, ".test-results", "bench-builds.json");
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(
      out,
      `${JSON.stringify({ at: new Date().toISOString(), servers: stack.info.servers, small: SMALL, large, rows }, null, 2)}\n`,
    );
    say(`\nMongoDB-wire server: ${stack.info.servers.mongodb}. Results written to ${out}`);
    return 0;
  } finally {
    await mongo.close();
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Creates `count` builds on a side's pipeline through the REST API, CREATE_CONCURRENCY requests at a time. */
async function createBuilds(api: (path: string, init?: RequestInit) => Promise<Response>, side: Side, count: number) {
  let left = count;
  const path = `/v2/organizations/${side.orgSlug}/pipelines/${side.pipelineSlug}/builds`;
  const body = JSON.stringify({ commit: "0123456789abcdef0123456789abcdef01234567", branch: "main", message: "bench" });
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (left > 0) {
        left--;
        const res = await api(path, { method: "POST", body });
        if (res.status !== 201) throw new Error(`create on ${side.label}: ${res.status} ${await res.text()}`);
        await res.text();
      }
    }),
  );
}

/** Clones a pipeline's real builds (and their jobs) until it holds `count` builds, numbered on from the last. */
async function seed(mongo: MongoClient, pipelineId: string, count: number) {
  const db = mongo.db("conveyor_builds");
  const builds = db.collection<Document>("builds");
  const jobs = db.collection<Document>("jobs");
  const templates = await builds.find({ pipelineId }).toArray();
  const templateJobs = await jobs.find({ pipelineId }).toArray();
  let number = templates.length;
  const batch = 2_000;
  const base = Date.now() - count * 1000;
  while (number < count) {
    const buildDocs: Document[] = [];
    const jobDocs: Document[] = [];
    for (let i = 0; i < batch && number < count; i++) {
      number++;
      const template = templates[number % templates.length] as Document;
      const id = crypto.randomUUID();
      const createdAt = new Date(base + number * 1000);
      buildDocs.push({
        ...template,
        _id: id,
        number,
        createdAt,
        scheduledAt: createdAt,
        state: "passed",
        finishedAt: createdAt,
      });
      for (const job of templateJobs.filter((j) => j.buildId === template._id)) {
        jobDocs.push({ ...job, _id: crypto.randomUUID(), buildId: id, buildNumber: number, state: "passed" });
      }
    }
    await builds.insertMany(buildDocs, { ordered: false });
    if (jobDocs.length > 0) await jobs.insertMany(jobDocs, { ordered: false });
  }
  await db
    .collection<{ _id: string; seq: number }>("build_numbers")
    .updateOne({ _id: pipelineId }, { $max: { seq: number } }, { upsert: true });
}
