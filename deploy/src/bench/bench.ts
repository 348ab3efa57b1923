import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { AgentsService } from "@conveyor/proto/agents";
import { createServiceClient } from "@conveyor/runtime";
import { bootstrapStack } from "../bootstrap/bootstrap.js";
import { type Env, envValue } from "../host/paths.js";
import { createApi } from "../rest/rest-client.js";
import { type Stack, startStack } from "../stack/stack.js";
import { type AgentBenchResult, type AgentBenchTarget, runAgentBench } from "./bench-agents.js";
import { checkCreatesUnderLoad, highestNumber } from "./bench-creates.js";
import { type LargestBenchResult, printLargestRows, runLargestBench } from "./bench-largest.js";
import { type LiveBenchResult, type LiveBenchTarget, printLiveRow, runLiveBench } from "./bench-live.js";
import { type LogBenchResult, logWhole, printLogRow, runLogBench } from "./bench-log.js";
import { type LogPageResult, logPagesWhole, printLogPageRows, runLogPageBench } from "./bench-log-page.js";
import {
  CREATE_CONNECTIONS,
  IDLE_REST_MS,
  type Measurement,
  measure,
  measureIdle,
  startHello,
  type Target,
} from "./bench-measure.js";
import { type PagePhase, type PageTarget, pageTargets, printPageRows, runPagePhase } from "./bench-pages.js";
import { BENCH_ROUTES, type BenchContext, type BenchRoute, ensureBenchPipeline, pagePath } from "./bench-routes.js";
import { printAgentRows, printCpuPerCreate } from "./bench-rows.js";
import { benchSettings, median, selected } from "./bench-stats.js";
import { printStreamRows, runStreamBench, type StreamBenchResult, streamsBroken } from "./bench-streams.js";
import { createProfiler } from "./cpu-profiles.js";
import { createsHeld, formatCreateCheck } from "./create-invariants.js";

/** The deadline of a call between the gateway and a service (RPC_TIMEOUT_MS's default). */
const RPC_DEADLINE_MS = 10_000;

/** The medians of one target over the trials. */
export interface Summary {
  target: string;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** The median time of one request at a time on the otherwise idle stack (GET routes only). */
  idleMs?: number;
  /** req/s as a share of the hello-world baseline's req/s. */
  shareOfHello: number;
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
/** autocannon measures latency in whole milliseconds: 0 means under one. */
const ms = (n: number) => (n < 1 ? "<1" : fmt(n));

/** Measures the hello-world baseline and every route of BENCH_ROUTES, interleaved, and prints the ratios. */
export async function runBench(repoRoot: string, env: Env = process.env): Promise<number> {
  const settings = benchSettings(env);
  const say = (line: string) => process.stdout.write(`${line}\n`);
  let stack: Stack | undefined;
  let dataDir: string | undefined;
  let hello: Awaited<ReturnType<typeof startHello>> | undefined;
  const onSignal = () => {
    void Promise.all([hello?.stop(), stack?.stop()]).finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  // BENCH_PROFILE=<dir>: CPU profiles of the stack's processes over the fan-out and job-life phases.
  const profiler = createProfiler(env, repoRoot, say);
  try {
    let apiUrl = envValue(env, "CONVEYOR_API_URL");
    let token = envValue(env, "CONVEYOR_API_TOKEN");
    let orgSlug = envValue(env, "CONVEYOR_ORG_SLUG");
    if (apiUrl && token && orgSlug) {
      say(`using the stack at ${apiUrl} (CONVEYOR_API_URL)`);
    } else {
      dataDir = mkdtempSync(join(tmpdir(), "conveyor-bench-"));
      say("starting an isolated stack on free ports…");
      // Per-request logging is not what is measured; errors still reach the logs. The real agent of the dispatch
      // benchmark pings every second.
      const stackEnv = {
        ...env,
        ...profiler.stackEnv,
        LOG_LEVEL: envValue(env, "LOG_LEVEL") ?? "warn",
        AGENT_PING_INTERVAL_S: envValue(env, "AGENT_PING_INTERVAL_S") ?? "1",
        // The benchmark sends thousands of requests a second to one organization: no rate limit on its own stack.
        RATE_LIMIT_PER_MINUTE: "0",
      };
      stack = await startStack({ repoRoot, dataDir, ports: "free", env: stackEnv, log: (l) => say(`  ${l}`) });
      const { credentials } = await bootstrapStack(stack.info, { env });
      apiUrl = stack.info.apiUrl;
      token = credentials.apiToken.secret;
      orgSlug = credentials.organization.slug;
    }
    hello = await startHello();
    const agentsUrl = stack?.info.serviceUrls.agents ?? envValue(env, "AGENTS_URL");
    const createCluster = agentsUrl
      ? async () => {
          const agents = createServiceClient(AgentsService, agentsUrl);
          const orgs = (await (
            await fetch(`${apiUrl}/v2/organizations/${orgSlug}`, { headers: { authorization: `Bearer ${token}` } })
          ).json()) as { id: string };
          const { cluster } = await agents.createCluster({ organizationId: orgs.id, name: `bench-${Date.now()}` });
          return cluster?.id ?? "";
        }
      : undefined;
    const pipelineSlug = await ensureBenchPipeline(apiUrl, token, orgSlug, createCluster);
    if (!pipelineSlug)
      say("no pipeline with a build to measure (set AGENTS_URL so the bench can make one): pipeline routes skipped");
    const ctx: BenchContext = { orgSlug, ...(pipelineSlug ? { pipelineSlug } : {}) };
    const headers = { authorization: `Bearer ${token}` };
    const helloTarget: Target = { name: "fastify hello-world", url: hello.url, headers: {} };
    const routeTargets = BENCH_ROUTES.flatMap((r: BenchRoute): Target[] => {
      const path = r.path(ctx);
      if (!path) return [];
      // Node's fetch (the idle timings) asks for gzip unless told otherwise; autocannon never does.
      const routeHeaders = { ...headers, "accept-encoding": r.gzip ? "gzip" : "identity" };
      const gzip = r.gzip ?? false;
      return [
        { name: r.name, url: `${apiUrl}${path}`, headers: routeHeaders, conditional: r.conditional ?? false, gzip },
      ];
    });
    if (pipelineSlug) {
      routeTargets.push({
        name: `POST …/builds (create, c=${CREATE_CONNECTIONS})`,
        url: `${apiUrl}/v2/organizations/${orgSlug}/pipelines/${pipelineSlug}/builds`,
        headers,
        post: JSON.stringify({ commit: "HEAD", branch: "bench-create", message: "bench create" }),
        connections: CREATE_CONNECTIONS,
      });
    }

    // The pages (docs/pages.md), when the bench can sign a person in (its own stack, or IDENTITY_URL): measured in
    // a phase of their own on a settled stack, after the REST rows (bench-pages.ts).
    const identityUrl = stack?.info.serviceUrls.identity ?? envValue(env, "IDENTITY_URL");
    let pageRows: PageTarget[] = [];
    if (pipelineSlug && identityUrl && selected(settings.only, "page")) {
      const bench = (await (
        await fetch(`${apiUrl}/v2/organizations/${orgSlug}/pipelines/${pipelineSlug}`, { headers })
      ).json()) as { cluster_id?: string };
      pageRows = (
        await pageTargets({ apiUrl, token, orgSlug, identityUrl, clusterId: bench.cluster_id ?? "" }, (l) =>
          say(`  ${l}`),
        )
      ).filter((t) => selected(settings.only, t.name));
    }

    // The second baseline: a static body as large as the plain page of 30 builds. On a small machine the client's
    // own work on a large answer bounds its latency; this row shows that bound beside the page's.
    const page = ctx.pipelineSlug ? pagePath(ctx) : undefined;
    const pageBytes = page
      ? (
          await (
            await fetch(`${apiUrl}${page}`, { headers: { ...headers, "accept-encoding": "identity" } })
          ).arrayBuffer()
        ).byteLength
      : 0;
    const baselines: Target[] = [helloTarget];
    if (pageBytes > 0) {
      baselines.push({
        name: `fastify static ${Math.round(pageBytes / 1024)} KB (page size)`,
        url: `${hello.url}body?bytes=${pageBytes}`,
        headers: {},
      });
    }
    const targets = [...baselines, ...routeTargets.filter((t) => selected(settings.only, t.name))];
    if (settings.only.length > 0)
      say(`BENCH_ONLY: ${targets.length - baselines.length} of ${routeTargets.length} routes`);
    say(
      `\n${settings.trials} interleaved trials, ${settings.connections} connections, ${settings.durationSec} s per run ` +
        "(after a 1 s warm-up of each target)\n",
    );
    // Every create is checked at the end: the builds above the pipeline's highest number now are the bench's.
    const createTarget = targets.find((t) => t.post);
    const api = createApi(apiUrl, orgSlug, token, 30_000);
    const pipelinePath = `/pipelines/${ctx.pipelineSlug}`;
    const numberBefore = createTarget ? await highestNumber(api, `${pipelinePath}/builds`) : 0;
    const warmups: Measurement[] = [];
    for (const t of targets) warmups.push(await measure(t, 0, settings, 1));
    // Single requests on the stack at rest, after the warm-up (a cold JIT is not what a running service answers
    // with) and a pause for the background work the warm-up's creates started.
    await new Promise((resolve) => setTimeout(resolve, IDLE_REST_MS));
    const idleMs = await measureIdle(targets);

    const results: Measurement[] = [];
    say(
      `${"target".padEnd(34)} ${"trial".padStart(5)} ${"req/s".padStart(9)} ${"p50 ms".padStart(7)} ${"p99 ms".padStart(7)}`,
    );
    const pids = Object.fromEntries((stack?.processes ?? []).map((p) => [p.name, p.pid]));
    for (let trial = 1; trial <= settings.trials; trial++) {
      for (const t of targets) {
        const m = await measure(t, trial, settings, settings.durationSec, pids);
        results.push(m);
        const warn = m.bad > 0 ? `   (${m.bad} non-2xx/errors!)` : "";
        say(
          `${m.target.padEnd(34)} ${String(trial).padStart(5)} ${fmt(m.reqPerSec).padStart(9)} ${ms(m.p50Ms).padStart(7)} ${ms(m.p99Ms).padStart(7)}${warn}`,
        );
      }
    }

    const summarize = (name: string): Summary => {
      const runs = results.filter((r) => r.target === name);
      return {
        target: name,
        reqPerSec: median(runs.map((r) => r.reqPerSec)),
        p50Ms: median(runs.map((r) => r.p50Ms)),
        p99Ms: median(runs.map((r) => r.p99Ms)),
        ...(idleMs.has(name) ? { idleMs: idleMs.get(name) } : {}),
        shareOfHello: 1,
      };
    };
    const base = summarize(helloTarget.name);
    const summary = [base, ...targets.slice(1).map((t) => summarize(t.name))].map((x) => ({
      ...x,
      shareOfHello: x.reqPerSec / base.reqPerSec,
    }));
    say(
      `\nmedians${" ".repeat(27)} ${"req/s".padStart(9)} ${"p50 ms".padStart(7)} ${"p99 ms".padStart(7)} ${"idle ms".padStart(8)}  share of hello-world`,
    );
    for (const x of summary) {
      const idle = x.idleMs === undefined ? "" : fmt(x.idleMs, 1);
      say(
        `${x.target.padEnd(34)} ${fmt(x.reqPerSec).padStart(9)} ${ms(x.p50Ms).padStart(7)} ${ms(x.p99Ms).padStart(7)} ${idle.padStart(8)}  ${fmt(x.shareOfHello * 100, 1)}%`,
      );
    }
    printCpuPerCreate(results, say);
    // The REST read of a build is the pages' probe and baseline: a read through the builds service's read cache.
    const restRead = routeTargets.find((t) => t.name === BENCH_ROUTES[2]?.name);
    let pages: PagePhase | undefined;
    if (pageRows.length > 0 && restRead) {
      say("\npages: waiting for the stack to settle after the creates…");
      pages = await runPagePhase(pageRows, { hello: helloTarget, restRead }, settings, pids, (l) => say(`  ${l}`));
      printPageRows(pages, settings.connections, say);
    }
    let creates: Awaited<ReturnType<typeof checkCreatesUnderLoad>> | undefined;
    if (createTarget) {
      say(
        `\nchecking creates: ${settings.durationSec} s more of them while three clients create, cancel and read back…`,
      );
      const before = [...warmups, ...results].filter((m) => m.target === createTarget.name);
      const acknowledged = before.reduce((sum, m) => sum + m.ok, 0);
      // autocannon drops the answers of the requests in flight when a run ends: one per connection and run.
      const inFlight = (before.length + 1) * (createTarget.connections ?? settings.connections);
      const load = async () => (await measure(createTarget, 0, settings)).ok;
      creates = await checkCreatesUnderLoad(api, pipelinePath, { after: numberBefore, acknowledged, inFlight }, load);
      for (const line of formatCreateCheck(creates.check, creates.probe)) say(line);
    }
    const agentTarget = selected(settings.only, "agents")
      ? agentBenchTarget(stack, env, { apiUrl, token, orgSlug })
      : undefined;
    let agents: AgentBenchResult | undefined;
    if (agentTarget) {
      say("");
      agents = await runAgentBench({ ...agentTarget, profiler }, env, (l) => say(`  ${l}`));
      printAgentRows(agents, say);
    } else if (selected(settings.only, "agents")) {
      say(
        "\nagent rows skipped: set AGENTS_URL, NATS_URL and CONVEYOR_AGENT_BIN to measure an external stack's agents",
      );
    }
    // Thousands of streaming agents held by the gateway beside a real one (bench-streams.ts).
    const streamTarget = selected(settings.only, "streams")
      ? (agentTarget ?? agentBenchTarget(stack, env, { apiUrl, token, orgSlug }))
      : undefined;
    let streams: StreamBenchResult | undefined;
    if (streamTarget?.agentTls) {
      say("");
      streams = await runStreamBench({ ...streamTarget, agentTls: streamTarget.agentTls, profiler }, env, (l) =>
        say(`  ${l}`),
      );
      printStreamRows(streams, say);
    } else if (selected(settings.only, "streams")) say("\nstreams row skipped: the stack has no TLS port");
    const liveTarget = selected(settings.only, "live")
      ? liveBenchTarget(stack, env, { apiUrl, token, orgSlug })
      : undefined;
    let live: LiveBenchResult | undefined;
    if (liveTarget) {
      say("");
      live = await runLiveBench(liveTarget, env, (l) => say(`  ${l}`));
      printLiveRow(live, say);
    } else if (selected(settings.only, "live")) {
      say(
        "\nlive row skipped: set AGENTS_URL, IDENTITY_URL and CONVEYOR_AGENT_URL to measure an external stack's pages",
      );
    }
    // The largest build and the largest log the limits allow (docs/limits.md), end to end.
    const largestTarget = liveTarget ?? liveBenchTarget(stack, env, { apiUrl, token, orgSlug });
    let largest: LargestBenchResult | undefined;
    let log: LogBenchResult | undefined;
    if (largestTarget && selected(settings.only, "largest build")) {
      say("");
      largest = await runLargestBench(largestTarget, settings.trials, (l) => say(`  ${l}`));
      printLargestRows(largest, RPC_DEADLINE_MS, say);
    }
    if (largestTarget && selected(settings.only, "largest log")) {
      say("");
      const pid = (name: string) => stack?.processes.find((p) => p.name === name)?.pid;
      const pids = { gateway: pid("gateway"), builds: pid("builds"), mongodb: stack?.server("mongodb")?.pid };
      log = await runLogBench(largestTarget, pids, env, (l) => say(`  ${l}`));
      printLogRow(log, say);
    }
    // A 20 MiB log's pages (issue 32): its tail's arrival and the gateway's memory (bench-log-page.ts).
    let logPages: LogPageResult[] | undefined;
    if (largestTarget && selected(settings.only, "log page")) {
      say("");
      logPages = await runLogPageBench(largestTarget, env, (l) => say(`  ${l}`));
      printLogPageRows(logPages, pages?.restMs, say);
    }
    if (!largestTarget && (selected(settings.only, "largest build") || selected(settings.only, "largest log")))
      say("\nlargest build and log skipped: set AGENTS_URL, IDENTITY_URL and CONVEYOR_AGENT_URL for an external stack");
    const out = join(repoRoot, ".test-results", "bench.json");
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(
      out,
      `${JSON.stringify({ settings, at: new Date().toISOString(), results, summary, creates, pages, agents, streams, live, largest, log, logPages }, null, 2)}\n`,
    );
    say(`\nresults written to ${out}`);
    const bad = results.some((r) => r.bad > 0);
    if (bad) say("some runs had non-2xx responses or errors: their figures are not valid");
    const broken = creates !== undefined && !createsHeld(creates.check, creates.probe);
    if (broken) say("creation broke an invariant or a read was stale: see the lines after `checking creates`");
    const streamsWrong = streams !== undefined && streamsBroken(streams);
    if (streamsWrong) say("the streams row lost a job, a stream or an agent call: see the `streams` rows");
    const liveLost = live !== undefined && (live.missing > 0 || live.unfinished > 0);
    if (liveLost) say("live pages missed lines or did not end: see the live row");
    const largestWrong = largest !== undefined && largest.wrong.length > 0;
    if (largestWrong) say("the largest build did not hold its jobs: see the lines after `largest build`");
    const logBroken = log !== undefined && !logWhole(log);
    if (logBroken) say("the largest log did not come back whole: see the `largest log` rows");
    const logPagesBroken = logPages !== undefined && !logPagesWhole(logPages);
    if (logPagesBroken) say("a log page came without its log's tail: see the `log page` rows");
    return bad || broken || streamsWrong || liveLost || largestWrong || logBroken || logPagesBroken ? 1 : 0;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await hello?.stop();
    await stack?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

/** What the agent benchmarks need: the stack this bench started, or an external one named by the environment. */
function agentBenchTarget(
  stack: Stack | undefined,
  env: Env,
  api: { apiUrl: string; token: string; orgSlug: string },
): AgentBenchTarget | undefined {
  const base = { apiUrl: api.apiUrl, apiToken: api.token, orgSlug: api.orgSlug };
  if (stack) {
    return {
      ...base,
      agentsUrl: stack.info.serviceUrls.agents,
      natsUrl: stack.info.natsUrl,
      agentBin: stack.info.agentBin,
      pids: Object.fromEntries(stack.processes.map((p) => [p.name, p.pid])),
      agentsStatsUrl: `http://127.0.0.1:${stack.info.ports.health.agents}/stats`,
      ...(stack.info.agentTlsUrl && stack.info.trustFile
        ? { agentTls: { url: stack.info.agentTlsUrl, trustFile: stack.info.trustFile } }
        : {}),
    };
  }
  const agentsUrl = envValue(env, "AGENTS_URL");
  const natsUrl = envValue(env, "NATS_URL");
  const agentBin = envValue(env, "CONVEYOR_AGENT_BIN");
  return agentsUrl && natsUrl && agentBin ? { ...base, agentsUrl, natsUrl, agentBin, pids: {} } : undefined;
}

/** What the live fan-out benchmark needs: the stack this bench started, or an external one named by the environment. */
function liveBenchTarget(
  stack: Stack | undefined,
  env: Env,
  api: { apiUrl: string; token: string; orgSlug: string },
): LiveBenchTarget | undefined {
  const base = { apiUrl: api.apiUrl, apiToken: api.token, orgSlug: api.orgSlug };
  if (stack) {
    return {
      ...base,
      agentUrl: stack.info.agentUrl,
      agentsUrl: stack.info.serviceUrls.agents,
      identityUrl: stack.info.serviceUrls.identity,
      gatewayPid: stack.processes.find((p) => p.name === "gateway")?.pid,
    };
  }
  const agentsUrl = envValue(env, "AGENTS_URL");
  const identityUrl = envValue(env, "IDENTITY_URL");
  const agentUrl = envValue(env, "CONVEYOR_AGENT_URL");
  return agentsUrl && identityUrl && agentUrl ? { ...base, agentsUrl, identityUrl, agentUrl } : undefined;
}
