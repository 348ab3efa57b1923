import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { connectNats, createLogger, EVENTS_STREAM } from "@conveyor/runtime";
import { bootstrapStack } from "../bootstrap/bootstrap.js";
import type { ManagedProcess } from "../host/child.js";
import { type Env, envValue } from "../host/paths.js";
import { type Answer, type Api, createApi, listBuilds } from "../rest/rest-client.js";
import { startLocalAgents } from "../stack/local-agents.js";
import { type Stack, startStack } from "../stack/stack.js";
import {
  type ConsumerBacklog,
  checkInvariants,
  countersDiffer,
  type Dependency,
  formatReport,
  type OutageSummary,
  overlapping,
  type PipelineCounters,
  type ProbeSample,
  type ProcessDependency,
  type ServerDependency,
  summarizeOutage,
  TERMINAL_BUILD_STATES,
} from "./fault-invariants.js";

/**
 * `npm run faults`: a fault drill on an isolated stack. Real agents run a steady stream of two-job builds (one job
 * uploads an artifact) while the MongoDB-wire server, NATS and the S3 store in turn are killed with SIGKILL, held
 * down for a while and started again on the same port and data; then each of the seven processes in turn is killed
 * with SIGKILL and left to the launcher's supervisor to start again. During each outage three REST routes are probed
 * continuously (status and latency). Once every build has finished the invariants are checked (fault-invariants.ts),
 * a table is printed and .test-results/faults.json written; the exit code is 1 when one fails.
 */

const DEPENDENCIES: readonly ServerDependency[] = ["mongodb", "nats", "s3"];
/** The processes killed in turn after the servers, each started again by the launcher's supervisor. */
const PROCESSES: readonly ProcessDependency[] = [
  "identity",
  "pipelines",
  "builds",
  "artifacts",
  "agents",
  "notifications",
  "gateway",
];
const AGENTS = 3;
/** The gateway's RPC deadline (RPC_TIMEOUT_MS's default); an answer later than this plus a margin is a hang. */
const RPC_DEADLINE_MS = 10_000;
const HANG_MS = RPC_DEADLINE_MS + 5_000;

/** The launcher's environment: this machine's tools, none of the settings that would point at other servers. */
function drillEnv(env: Env): Env {
  const keep = /^(PATH|HOME|TMPDIR|USER|LANG|GO\w*|CONVEYOR_CACHE_DIR|\w+_BIN)$/;
  const out: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(env)) if (keep.test(key)) out[key] = value;
  return {
    ...out,
    LOG_LEVEL: envValue(env, "LOG_LEVEL") ?? "warn",
    RATE_LIMIT_PER_MINUTE: "0",
    AGENT_PING_INTERVAL_S: "1",
    AGENT_HEARTBEAT_INTERVAL_S: "2",
    JOB_ASSIGN_TIMEOUT_S: "15",
  };
}

/** A local git repository with one commit, which the agents check out by path. */
function gitRepository(): string {
  const dir = mkdtempSync(join(tmpdir(), "conveyor-faults-repo-"));
  writeFileSync(join(dir, "README.md"), "# fault drill\n");
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=faults", "-c", "user.email=faults@localhost", ...args], { cwd: dir });
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-q", "-m", "first");
  return dir;
}

/** The drill, from start to report; resolves with the process exit code. */
export async function runFaults(repoRoot: string, env: Env = process.env): Promise<number> {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const target = Number(envValue(env, "FAULTS_BUILDS") ?? 200);
  const downMs = Number(envValue(env, "FAULTS_DOWN_S") ?? 10) * 1000;
  const drainMs = Number(envValue(env, "FAULTS_DRAIN_S") ?? 300) * 1000;
  const started = Date.now();
  const dataDir = mkdtempSync(join(tmpdir(), "conveyor-faults-"));
  const stackEnv = drillEnv(env);
  say(`fault drill: ${target} builds, each dependency down ${downMs / 1000} s; data in ${dataDir}`);
  const stack = await startStack({
    repoRoot,
    dataDir,
    ports: "free",
    env: stackEnv,
    log: (l) => say(`  ${l}`),
    startTimeoutMs: 120_000,
  });
  let agents: { stop(): Promise<void> } | undefined;
  let failed = true;
  try {
    const { credentials } = await bootstrapStack(stack.info, { env: stackEnv });
    agents = startLocalAgents({
      count: AGENTS,
      bin: stack.info.agentBin,
      endpoint: stack.info.agentUrl,
      token: credentials.agentToken.secret,
      dataDir,
      logsDir: stack.info.logsDir,
      env: { PATH: env.PATH, HOME: env.HOME, TMPDIR: env.TMPDIR },
      detached: false,
      log: (l) => say(`  ${l}`),
      onSpawn: (p) => stack.adopt(p),
    });
    const api = createApi(stack.info.apiUrl, credentials.organization.slug, credentials.apiToken.secret, HANG_MS);
    const marks = join(dataDir, "runs.txt");
    const uploads = join(dataDir, "uploads.txt");
    writeFileSync(marks, "");
    writeFileSync(uploads, "");
    const configuration = [
      "env:",
      `  MARKS: ${marks}`,
      `  UPLOADS: ${uploads}`,
      "steps:",
      "  - label: mark",
      '    command: echo "$BUILDKITE_JOB_ID" >> "$MARKS"',
      "  - label: artifact",
      // The upload's start and end (ms), to count the uploads that ran across the S3 outage.
      '    command: echo "$BUILDKITE_JOB_ID" >> "$MARKS" && echo "$BUILDKITE_JOB_ID" > out.txt && s=$(date +%s%3N) && buildkite-agent artifact upload out.txt && echo "$s $(date +%s%3N)" >> "$UPLOADS"',
    ].join("\n");
    const pipeline = await api("POST", "/pipelines", {
      name: "Fault drill",
      repository: gitRepository(),
      cluster_id: credentials.cluster.id,
      configuration,
    });
    if (pipeline.status !== 201) throw new Error(`pipeline create answered ${pipeline.status}`);
    const slug = (pipeline.body as { slug: string }).slug;
    const buildsPath = `/pipelines/${slug}/builds`;

    // Every build answered 201, by number; creates that got anything else are tried again (not acknowledged).
    const acknowledged: number[] = [];
    const createAnswers: Record<string, number> = {};
    const refusedCreates: Array<{ at: string; status: string; ms: number }> = [];
    const create = async (): Promise<Answer> => {
      const res = await api("POST", buildsPath, { commit: "HEAD", branch: "main", message: "fault drill" });
      const key = res.hung ? "hang" : String(res.status);
      createAnswers[key] = (createAnswers[key] ?? 0) + 1;
      if (res.status !== 201) refusedCreates.push({ at: new Date().toISOString(), status: key, ms: res.ms });
      if (res.status === 201) acknowledged.push((res.body as { number: number }).number);
      return res;
    };
    // A steady rate, spread over the outages (about 40 s each with the settling time).
    const paceMs = Math.max(
      100,
      Math.round((20_000 + DEPENDENCIES.length * (downMs + 30_000) + PROCESSES.length * 20_000) / target),
    );
    const creator = (async () => {
      while (acknowledged.length < target) {
        const res = await create();
        await sleep(res.status === 201 ? paceMs : 500);
      }
    })();

    await sleep(15_000);
    const samples: ProbeSample[] = [];
    const outages: Array<OutageSummary & { killedAt?: number }> = [];
    for (const dependency of DEPENDENCIES) {
      outages.push(await outage(stack, dependency, downMs, samples, api, buildsPath, create, say));
      await sleep(15_000);
    }
    for (const name of PROCESSES) {
      outages.push(await outage(stack, name, 0, samples, api, buildsPath, create, say));
      await sleep(5_000);
    }
    say(`restarts by the supervisor: ${JSON.stringify(stack.supervisor.restarts())}`);
    await creator;
    say(`${acknowledged.length} builds acknowledged; waiting for them to finish (up to ${drainMs / 1000} s)…`);

    const deadline = Date.now() + drainMs;
    let builds = await listBuilds(api, buildsPath);
    while (builds.some((b) => !TERMINAL_BUILD_STATES.has(b.state)) && Date.now() < deadline) {
      await sleep(2_000);
      builds = await listBuilds(api, buildsPath);
    }
    // Counters and consumers are eventually consistent: give them a little time after the last build finished.
    let counters: PipelineCounters | undefined;
    let consumers: ConsumerBacklog[] = [];
    const settle = Date.now() + 30_000;
    for (;;) {
      counters = (await api("GET", `/pipelines/${slug}`)).body as PipelineCounters | undefined;
      consumers = await consumerBacklogs(stack.info.natsUrl);
      const same = countersDiffer(counters, builds).length === 0;
      if ((same && consumers.every((c) => c.pending + c.ackPending === 0)) || Date.now() > settle) break;
      await sleep(2_000);
    }
    const runs = readFileSync(marks, "utf8").split("\n").filter(Boolean);
    const uploadTimes = readFileSync(uploads, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split(" ").map(Number) as [number, number]);
    for (const o of outages) {
      if (o.dependency === "s3" && o.killedAt !== undefined) {
        o.spanning = overlapping(uploadTimes, o.killedAt, o.killedAt + o.downMs);
      }
    }
    const report = checkInvariants({ acknowledged, builds, runs, counters, consumers, outages });
    say("");
    for (const line of formatReport(outages, report)) say(line);
    say(`build creates answered: ${JSON.stringify(createAnswers)}; consumers: ${JSON.stringify(consumers)}`);
    const resultsDir = join(repoRoot, ".test-results");
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(
      join(resultsDir, "faults.json"),
      `${JSON.stringify(
        {
          at: new Date(started).toISOString(),
          seconds: Math.round((Date.now() - started) / 1000),
          settings: { builds: target, downMs, agents: AGENTS, paceMs },
          outages,
          report,
          createAnswers,
          refusedCreates,
          counters,
          consumers,
          samples,
        },
        null,
        2,
      )}\n`,
    );
    say(`\n${report.failures.length === 0 ? "all invariants hold" : `FAILED:\n  ${report.failures.join("\n  ")}`}`);
    say(`wrote .test-results/faults.json (${Math.round((Date.now() - started) / 1000)} s in all)`);
    failed = report.failures.length > 0;
    return failed ? 1 : 0;
  } finally {
    await agents?.stop();
    await stack.stop();
    if (failed || envValue(env, "FAULTS_KEEP_DATA") === "1") say(`data and logs kept in ${dataDir}`);
    else if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * One outage: kills a server or process with SIGKILL and probes three routes until each has answered with success
 * five times in a row after it runs again (at most 90 s). A server is held down for `downMs` and then released to the
 * supervisor; a process (`downMs` 0) is left to the supervisor at once, and "back" starts when it runs again.
 */
async function outage(
  stack: Stack,
  dependency: Dependency,
  downMs: number,
  samples: ProbeSample[],
  api: Api,
  buildsPath: string,
  create: () => Promise<Answer>,
  say: (line: string) => void,
): Promise<OutageSummary & { killedAt: number }> {
  const proc = stack.supervisor.current(dependency);
  if (!proc) throw new Error(`no ${dependency} process of the stack's own to kill`);
  const known = (await listBuilds(api, buildsPath))[0]?.number ?? 1;
  const held = downMs > 0;
  say(`killing ${proc.name} (SIGKILL)${held ? ` for ${downMs / 1000} s` : ""}…`);
  if (held) stack.supervisor.hold(dependency);
  proc.kill("SIGKILL");
  await proc.exited;
  const killedAt = Date.now();
  let phase: ProbeSample["phase"] = "down";
  let restartAt = Number.POSITIVE_INFINITY;
  const routes: Array<{ route: string; call: () => Promise<Answer>; pauseMs: number }> = [
    { route: "GET build", call: () => api("GET", `${buildsPath}/${known}`), pauseMs: 200 },
    { route: "GET pipelines", call: () => api("GET", "/pipelines"), pauseMs: 200 },
    // Builds made by this probe count as acknowledged too; slower, so as not to flood the agents.
    { route: "POST build", call: create, pauseMs: 1_000 },
  ];
  const streak = new Map<string, number>();
  const probing = routes.map(async ({ route, call, pauseMs }) => {
    for (;;) {
      const at = Date.now() - killedAt;
      const during = phase;
      const res = await call();
      samples.push({
        dependency,
        route,
        phase: during,
        at,
        status: res.status,
        ms: res.ms,
        jsonMessage: res.jsonMessage,
        hung: res.hung,
      });
      const ok = res.status >= 200 && res.status < 300;
      streak.set(route, ok && at >= restartAt ? (streak.get(route) ?? 0) + 1 : 0);
      if ((streak.get(route) ?? 0) >= 5 || Date.now() - killedAt > restartAt + 90_000) return;
      await sleep(pauseMs);
    }
  });
  let again: ManagedProcess;
  if (held) {
    await sleep(downMs);
    restartAt = Date.now() - killedAt;
    phase = "back";
    again = await stack.supervisor.release(dependency);
  } else {
    again = await runningAgain(stack, dependency, proc, 120_000);
    restartAt = Date.now() - killedAt;
    phase = "back";
  }
  say(`  ${again.name} started again after ${((Date.now() - killedAt) / 1000).toFixed(1)} s`);
  await Promise.all(probing);
  const summary = { ...summarizeOutage(dependency, samples, restartAt), killedAt };
  say(
    `  ${dependency}: while down ${JSON.stringify(summary.byStatus)}, after ${JSON.stringify(summary.afterRestart)}, max ${summary.maxMs} ms, recovered ${summary.recoveryMs ?? "never"} ms after the restart`,
  );
  return summary;
}

/** The supervisor's new process for `name` once it runs (the one killed was `killed`). */
async function runningAgain(
  stack: Stack,
  name: Dependency,
  killed: ManagedProcess,
  timeoutMs: number,
): Promise<ManagedProcess> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = stack.supervisor.current(name);
    if (now && now !== killed && now.running()) return now;
    if (Date.now() > deadline) throw new Error(`${name} was not started again within ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}

/** The backlog of every durable consumer on the events stream. */
async function consumerBacklogs(natsUrl: string): Promise<ConsumerBacklog[]> {
  const nats = await connectNats(natsUrl, "faults", createLogger("faults", "warn"));
  try {
    const jsm = await nats.js.jetstreamManager();
    const out: ConsumerBacklog[] = [];
    for await (const c of jsm.consumers.list(EVENTS_STREAM)) {
      out.push({ name: c.name, pending: c.num_pending, ackPending: c.num_ack_pending, redelivered: c.num_redelivered });
    }
    return out;
  } finally {
    await nats.close();
  }
}
