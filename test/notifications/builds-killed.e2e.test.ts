// The builds service killed with SIGKILL during a burst of builds (a stack of its own, one process of each, as
// `npm start` runs it; the launcher's supervisor starts the killed process again): every build that exists at the
// end must have been announced to an organization webhook as scheduled and as finished. The builds service records
// each state event in its outbox before the write (docs/notifications.md#at-least-once-from-the-write-on), so a write
// whose publish the kill cut off is published by the relay of the process started again.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  bootstrapStack,
  type Credentials,
  type ManagedProcess,
  type Stack,
  StackStartError,
  startStack,
} from "@conveyor/deploy";
import { eventually, startReceiver } from "../support/webhook-receiver.js";

const repoRoot = join(__dirname, "..", "..");
/** Workers creating and canceling builds at once, and builds each makes. */
const WORKERS = 4;
const BUILDS_EACH = 12;

/** This machine's PATH, tool cache and binaries, without the shared test stack's settings. */
function ownEnv(): NodeJS.ProcessEnv {
  const keep = /^(PATH|HOME|TMPDIR|USER|LANG|GO\w*|CONVEYOR_CACHE_DIR|\w+_BIN)$/;
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (keep.test(key)) env[key] = value;
  return { ...env, LOG_LEVEL: "info", OUTBOUND_ALLOW_HOSTS: "127.0.0.1", NOTIFY_DISPATCH_INTERVAL_MS: "200" };
}

let stack: Stack;
let credentials: Credentials;
let dataDir: string;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const lines: string[] = [];

async function rest(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${stack.info.apiUrl}/v2/organizations/${credentials.organization.slug}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${credentials.apiToken.secret}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A call tried again while the builds service comes back (a refused connection, a 5xx). */
async function retried(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      const res = await rest(method, path, body);
      if (res.status < 500 || Date.now() > deadline) return res;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await sleep(200);
  }
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "conveyor-builds-killed-"));
  stack = await startStack({
    repoRoot,
    dataDir,
    ports: "free",
    env: ownEnv(),
    startTimeoutMs: 120_000,
    log: (line) => lines.push(line),
  }).catch((err: unknown) => {
    if (err instanceof StackStartError && err.logTail) err.message += `\n${err.logTail}`;
    throw err;
  });
  credentials = (await bootstrapStack(stack.info)).credentials;
  receiver = await startReceiver();
}, 240_000);

afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
  if (process.env.CONVEYOR_KEEP_TEST_DATA === "1") process.stderr.write(`[builds-killed] data kept in ${dataDir}\n`);
  else if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("the builds service killed during a burst of builds", () => {
  it("loses no build's scheduled or finished webhook", async () => {
    const hook = await rest("POST", "/webhooks", {
      webhook_url: receiver.url("/builds"),
      events: ["build.scheduled", "build.finished"],
    });
    expect(hook.status).toBe(201);
    receiver.tokens.set("/builds", (hook.body as { token: string }).token);
    // No agent runs here: each build is canceled while its job waits, which finishes it at once.
    const created = await rest("POST", "/pipelines", {
      name: `Builds killed ${Date.now()}`,
      repository: "https://example.com/repo.git",
      cluster_id: credentials.cluster.id,
      configuration: "steps:\n  - command: echo never runs\n",
    });
    expect(created.status).toBe(201);
    const slug = (created.body as { slug: string }).slug;

    // Each worker makes BUILDS_EACH builds, each canceled once made, going on through the kill and the restart: a
    // call the kill cuts is tried again (a create it cut may still have made its build: all are found at the end).
    let cut = 0;
    const worker = async () => {
      const deadline = Date.now() + 180_000;
      for (let made = 0; made < BUILDS_EACH && Date.now() < deadline; ) {
        const res = await rest("POST", `/pipelines/${slug}/builds`, { commit: "HEAD", branch: "main" }).catch(
          () => null,
        );
        if (res?.status !== 201) {
          cut++;
          await sleep(200);
          continue;
        }
        made++;
        const number = (res.body as { number: number }).number;
        const canceled = await rest("PUT", `/pipelines/${slug}/builds/${number}/cancel`).catch(() => null);
        if (canceled?.status !== 200) cut++;
      }
    };
    const burst = Promise.all(Array.from({ length: WORKERS }, worker));
    // The kill lands while the workers create and cancel.
    await eventually("the first builds", () => receiver.at("/builds").length >= 4, 30_000);
    const victim = stack.supervisor.current("builds") as ManagedProcess;
    victim.kill("SIGKILL");
    await burst;
    const deadline = Date.now() + 90_000;
    while (!stack.supervisor.current("builds")?.running() || stack.supervisor.current("builds") === victim) {
      if (Date.now() > deadline) throw new Error(`builds was not started again:\n${lines.slice(-20).join("\n")}`);
      await sleep(100);
    }

    // Builds a cut call left unfinished are canceled now; then every build is finished.
    type RestBuild = { number: number; state: string; finished_at: string | null };
    let builds: RestBuild[] = [];
    for (const end = Date.now() + 120_000; ; ) {
      builds = (await retried("GET", `/pipelines/${slug}/builds?per_page=100`)).body as RestBuild[];
      const open = builds.filter((b) => !b.finished_at);
      if (open.length === 0) break;
      if (Date.now() > end) throw new Error(`still unfinished: ${open.map((b) => `#${b.number} ${b.state}`)}`);
      for (const b of open) await retried("PUT", `/pipelines/${slug}/builds/${b.number}/cancel`);
      await sleep(500);
    }
    expect(builds.length).toBeGreaterThanOrEqual(WORKERS * BUILDS_EACH);

    // Every build was announced scheduled and finished, each under one delivery id, signed.
    const numbersOf = (event: string) => {
      const seen = new Set<string>();
      return receiver
        .at("/builds")
        .filter((r) => r.event === event && !seen.has(r.delivery) && seen.add(r.delivery))
        .map((r) => (r.body.build as { number: number }).number)
        .sort((a, b) => a - b);
    };
    const all = builds.map((b) => b.number).sort((a, b) => a - b);
    await eventually(
      "every build's webhooks",
      () => numbersOf("build.finished").length >= all.length && numbersOf("build.scheduled").length >= all.length,
      60_000,
    );
    expect(numbersOf("build.scheduled")).toEqual(all);
    expect(numbersOf("build.finished")).toEqual(all);
    expect(receiver.at("/builds").every((r) => r.verified)).toBe(true);
    expect(stack.supervisor.restarts()).toMatchObject({ builds: 1 });
    process.stderr.write(`[builds-killed] ${all.length} builds, ${cut} calls cut by the kill, every one announced\n`);
  }, 600_000);
});
