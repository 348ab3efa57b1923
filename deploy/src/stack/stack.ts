import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { BACKEND_SERVICES } from "@conveyor/runtime";
import { describeExit, type ExitStatus, type ManagedProcess } from "../host/child.js";
import { cacheDir, type DataPaths, dataPaths, type Env } from "../host/paths.js";
import {
  allocateFreePorts,
  getFreePort,
  isPortFree,
  PORT_KEYS,
  type PortKey,
  portsFromEnv,
  portVar,
  type StackPorts,
} from "../ports/ports.js";
import { type BuildContext, ensureTool } from "../tools/go-build.js";
import { type BinaryChoice, createMachineProbe, planAgent, planMongo, planNats, planS3 } from "../tools/tools.js";
import type { Balancer } from "./balancer.js";
import { credentialsKey } from "./credentials-key.js";
import { ensureLocalTls } from "./local-tls.js";
import { type ReplicaSet, replicaCount, replicaSlots, startReplicaBalancers, startReplicaSet } from "./replicas.js";
import {
  resolveBinary,
  type ServerContext,
  type StartedServer,
  s3Settings,
  startMongo,
  startNats,
  startS3,
} from "./servers.js";
import {
  createTopology,
  type ProcessContext,
  type ProcessName,
  readinessUrl,
  serviceUrls,
  startProcess,
  type Topology,
} from "./services.js";
import { claimDataDir, recordProcess, releaseDataDir, type StackRecord, writeStackFile } from "./stack-file.js";
import type { StackInfo } from "./stack-info.js";
import { type SupervisedEntry, type Supervisor, superviseProcesses } from "./supervisor.js";
import { StackStartError } from "./wait.js";

export interface StartStackOptions {
  /** The monorepo root (services/<name>/dist/main.js are started from there). */
  repoRoot: string;
  /** Where the servers keep their data, and where logs, stack.json and credentials.json go. */
  dataDir: string;
  /** "default": the fixed ports of `npm start` (env-overridable, checked free); "free": ports from the OS. */
  ports: "default" | "free" | StackPorts;
  /** The environment to read settings from and to pass on; process.env by default. */
  env?: Env;
  /** Progress messages. */
  log?: (line: string) => void;
  /**
   * Start the processes in their own process groups, so that a terminal's Ctrl-C reaches only the launcher,
   * which then stops them in order. Leave false inside a test runner, so that they share its fate.
   */
  detached?: boolean;
  /** How long one server or process may take to become ready. */
  startTimeoutMs?: number;
  /** Aborting it interrupts the start; whatever was started is stopped. */
  signal?: AbortSignal;
}

/** A running stack. */
export interface Stack {
  readonly info: StackInfo;
  readonly processes: readonly ManagedProcess[];
  /**
   * Resolves when a process keeps dying and the supervisor gave up on it (supervisor.ts: a process that exits while
   * the stack is not stopping is started again, and given up after five quick deaths in a row); its owner then
   * stops the stack.
   */
  readonly unexpectedExit: Promise<{ proc: ManagedProcess; status: ExitStatus; reason: string }>;
  /**
   * Keeps the stack's own servers ("mongodb", "nats", "s3") and, with one replica each, the seven processes (by
   * name) running. With CONVEYOR_REPLICAS above 1 the replica sets keep the processes running instead.
   */
  readonly supervisor: Supervisor;
  /** With CONVEYOR_REPLICAS above 1: the replicas of each backend service and of the gateway; else empty. */
  readonly replicaSets: readonly ReplicaSet[];
  /** With CONVEYOR_REPLICAS above 1: the balancers on the usual ports in front of the replicas; else empty. */
  readonly balancers: readonly Balancer[];
  /** Stops the seven processes, then the servers; SIGKILL after 10 s. Safe to call more than once. */
  stop(): Promise<void>;
  /**
   * Records a process started beside the stack (a local agent) in stack.json, under its name (replacing an earlier
   * process of that name), so that `status` shows it and a later launcher stops it if this one dies; and kills it if
   * the launcher exits without stopping. Its owner stops it, before stop().
   */
  adopt(proc: ManagedProcess): void;
  /** The process of one of the stack's own servers now (the last one started); undefined for an external server. */
  server(kind: ServerKind): ManagedProcess | undefined;
}

/** The servers the stack depends on. */
export type ServerKind = "mongodb" | "nats" | "s3";

const SERVER_NAMES = new Set(["ferretdb", "mongod", "nats-server", "versitygw", "minio"]);

/**
 * Starts NATS, the MongoDB-wire server and S3 (or uses the user's), then the five backend services and the
 * gateway, waiting for every health check. On any failure everything started so far is stopped again.
 */
export async function startStack(opts: StartStackOptions): Promise<Stack> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? (() => {});
  const paths = dataPaths(opts.dataDir);
  mkdirSync(paths.logs, { recursive: true });
  const timeoutMs = opts.startTimeoutMs ?? 60_000;
  const detached = opts.detached ?? false;

  const record = await claimDataDir(paths, log);
  const procs: ManagedProcess[] = [];
  const adopted = new Map<string, ManagedProcess>();
  const replicaSets: ReplicaSet[] = [];
  const balancers: Balancer[] = [];
  let stopping = false;
  let stopped: Promise<void> | undefined;
  const killAll = () => {
    for (const p of [...adopted.values(), ...procs]) p.killNow();
  };
  // A launcher that exits without stopping (an uncaught error, process.exit) must not leave servers behind.
  process.on("exit", killAll);
  const track = (proc: ManagedProcess) => {
    procs.push(proc);
    // A replica started again replaces its earlier record.
    record.processes = record.processes.filter((r) => r.name !== proc.name);
    record.processes.push(recordProcess(proc.name, proc.pid));
    writeStackFile(paths, record);
  };
  const adopt = (proc: ManagedProcess) => {
    adopted.set(proc.name, proc);
    record.processes = record.processes.filter((r) => r.name !== proc.name);
    record.processes.push(recordProcess(proc.name, proc.pid));
    writeStackFile(paths, record);
  };
  let supervisor: Supervisor | undefined;
  const stop = () => {
    stopping = true;
    supervisor?.close();
    for (const set of replicaSets) set.close();
    const closeBalancers = async () => {
      await Promise.all(balancers.map((b) => b.close()));
    };
    stopped ??= stopAll(procs, paths, log, closeBalancers).finally(() => process.off("exit", killAll));
    return stopped;
  };

  try {
    const ports = await resolvePorts(opts.ports, env);
    const cache = cacheDir(env);
    const probe = createMachineProbe(env);
    const mongoPlan = planMongo(env, cache, probe);
    const natsPlan = planNats(env, cache, probe);
    const s3Plan = planS3(env, cache, probe);
    const agentChoice = planAgent(env, cache, probe);
    if (opts.ports === "default")
      await checkPortsFree(ports, { mongo: mongoPlan.kind, nats: natsPlan.kind, s3: s3Plan.kind });

    // Builds run one after the other (each already uses every core); the servers then start together.
    const build: BuildContext = {
      cache,
      logsDir: paths.logs,
      env,
      log,
      ...(opts.signal ? { signal: opts.signal } : {}),
    };
    for (const plan of [natsPlan, mongoPlan, s3Plan, { binary: agentChoice }]) {
      const choice: BinaryChoice | undefined = "binary" in plan ? plan.binary : undefined;
      if (choice?.source === "build" && choice.spec) await ensureTool(choice.spec, build);
    }
    // The stack runs no agent itself: `npm start` starts local agents after bootstrap, the tests their own.
    const agentBin = await resolveBinary(agentChoice, build);

    const serverCtx: ServerContext = {
      paths,
      env,
      cwd: opts.repoRoot,
      detached,
      timeoutMs,
      track,
      ...(opts.signal ? { signal: opts.signal } : {}),
    };
    const s3Endpoint = s3Plan.kind === "external" ? s3Plan.endpoint : `http://127.0.0.1:${ports.s3}`;
    const s3 = s3Settings(env, s3Endpoint, s3Plan.kind === "external");
    log("starting the servers (MongoDB wire protocol, NATS JetStream, S3)…");
    const t0 = Date.now();
    const [mongo, nats, s3Server] = await Promise.all([
      startMongo(mongoPlan, ports.mongodb, serverCtx, build),
      startNats(natsPlan, ports.nats, serverCtx, build),
      startS3(s3Plan, s3, ports.s3, serverCtx, build),
    ]);
    log(`  ${mongo.label} ${mongo.url}`);
    log(`  ${nats.label} ${nats.url}`);
    log(`  ${s3Server.label} ${s3Server.url}`);
    log(`servers ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const servers: Record<ServerKind, StartedServer> = { mongodb: mongo, nats, s3: s3Server };
    const restartServer = async (kind: ServerKind): Promise<ManagedProcess> => {
      const proc = servers[kind].proc;
      if (!proc) throw new Error(`the ${kind} server is not one the stack started`);
      if (proc.running()) throw new Error(`${proc.name} is still running`);
      const again =
        kind === "mongodb"
          ? await startMongo(mongoPlan, ports.mongodb, serverCtx, build)
          : kind === "nats"
            ? await startNats(natsPlan, ports.nats, serverCtx, build)
            : await startS3(s3Plan, s3, ports.s3, serverCtx, build);
      servers[kind] = again;
      if (!again.proc) throw new Error(`${kind} was not started again`);
      return again.proc;
    };

    // The gateway's TLS port, for the agents' streaming pings: a local CA and certificate made once under the data dir.
    const localTls = ports.gatewayTls === undefined ? undefined : ensureLocalTls(join(paths.root, "tls"), log);
    const tls =
      localTls && ports.gatewayTls !== undefined
        ? { certFile: localTls.certFile, keyFile: localTls.keyFile, port: ports.gatewayTls }
        : undefined;
    const topo = {
      ...createTopology(env, ports, { mongodbUrl: mongo.url, natsUrl: nats.url, s3 }),
      credentialsKey: credentialsKey(paths.credentialsKeyFile, env.CREDENTIALS_ENCRYPTION_KEY),
      ...(tls ? { tls } : {}),
    };
    const procCtx: ProcessContext = {
      repoRoot: opts.repoRoot,
      logsDir: paths.logs,
      env,
      detached,
      timeoutMs,
      track,
      ...(opts.signal ? { signal: opts.signal } : {}),
    };
    const replicas = replicaCount(env);
    const t1 = Date.now();
    // What the supervisor keeps running: the stack's own servers, and the processes when there is one of each.
    const supervised: SupervisedEntry[] = [];
    for (const kind of ["mongodb", "nats", "s3"] as const) {
      const proc = servers[kind].proc;
      if (proc) supervised.push({ name: kind, proc, restart: () => restartServer(kind) });
    }
    if (replicas === 1) {
      const startSupervised = async (name: ProcessName) => {
        const proc = await startProcess(name, topo, procCtx);
        supervised.push({ name, proc, restart: () => startProcess(name, topo, procCtx) });
      };
      log(`starting ${BACKEND_SERVICES.join(", ")}…`);
      await Promise.all(
        BACKEND_SERVICES.map(async (name) => {
          await startSupervised(name);
          log(`  ${name} ready on 127.0.0.1:${ports[name]} (health :${ports.health[name]})`);
        }),
      );
      log("starting gateway…");
      await startSupervised("gateway");
      log(`all seven processes ready in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    } else {
      const start = (name: ProcessName) =>
        startReplicas(name, replicas, topo, procCtx, { stopping: () => stopping, log }).then(({ set, started }) => {
          replicaSets.push(set);
          balancers.push(...started);
        });
      log(`starting ${replicas} replicas each of ${BACKEND_SERVICES.join(", ")}, each set behind a balancer…`);
      await Promise.all(BACKEND_SERVICES.map(start));
      log(`starting ${replicas} gateways behind a balancer…`);
      await start("gateway");
      log(`all ${replicas * 6} processes ready in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    }

    const apiUrl = `http://127.0.0.1:${ports.gateway}`;
    const info: StackInfo = {
      apiUrl,
      agentUrl: `${apiUrl}/v3`,
      ...(tls && localTls ? { agentTlsUrl: `https://localhost:${tls.port}/v3`, trustFile: localTls.trustFile } : {}),
      serviceUrls: serviceUrls(ports),
      mongodbUrl: mongo.url,
      natsUrl: nats.url,
      s3,
      servers: { mongodb: mongo.label, nats: nats.label, s3: s3Server.label },
      ports,
      dataDir: paths.root,
      logsDir: paths.logs,
      agentBin,
      ...(replicas > 1 ? { replicas } : {}),
    };
    record.state = "running";
    record.info = info;
    writeStackFile(paths, record);

    supervisor = superviseProcesses(supervised, { log, stopping: () => stopping });
    const unexpectedExit = supervisor.gaveUp.then(({ proc, status, reason }) => ({ proc, status, reason }));
    const server = (kind: ServerKind) => servers[kind].proc;
    return { info, processes: procs, unexpectedExit, supervisor, replicaSets, balancers, stop, adopt, server };
  } catch (err) {
    if (procs.length > 0) {
      log(`${opts.signal?.aborted ? "start interrupted" : "start failed"}; stopping what was started…`);
    }
    await stop();
    throw err;
  }
}

/**
 * Starts the replicas of one process on free ports, kept running by a replica set, and the balancers on the
 * process's usual ports in front of them (the gateway's on GATEWAY_HOST, the backends' on 127.0.0.1).
 */
async function startReplicas(
  name: ProcessName,
  count: number,
  topo: Topology,
  ctx: ProcessContext,
  supervision: { stopping(): boolean; log(line: string): void },
): Promise<{ set: ReplicaSet; started: Balancer[] }> {
  const slots = await replicaSlots(name, count, getFreePort);
  const set = await startReplicaSet({
    name,
    slots,
    readinessUrl: (slot) => readinessUrl(name, topo.ports, slot),
    start: (slot) => startProcess(name, topo, ctx, slot),
    ...supervision,
  });
  const started =
    name === "gateway"
      ? // The gateways' TLS ports are their slots' second ports: balanced like a backend's health ports.
        await startReplicaBalancers(set, {
          host: topo.gatewayHost,
          port: topo.ports.gateway,
          ...(topo.tls ? { healthPort: topo.tls.port } : {}),
        })
      : await startReplicaBalancers(set, {
          host: "127.0.0.1",
          port: topo.ports[name],
          healthPort: topo.ports.health[name],
        });
  const where = slots.map((s) => `:${s.port}`).join(", ");
  supervision.log(`  ${name}: ${count} replicas (${where}) behind 127.0.0.1:${topo.ports[name]}`);
  return { set, started };
}

async function resolvePorts(spec: StartStackOptions["ports"], env: Env): Promise<StackPorts> {
  if (spec === "default") return portsFromEnv(env);
  if (spec === "free") return allocateFreePorts();
  return spec;
}

/** Fails clearly, naming the variable to change, when a port `npm start` needs is taken by another program. */
async function checkPortsFree(ports: StackPorts, kinds: { mongo: string; nats: string; s3: string }): Promise<void> {
  const skip = new Set<PortKey>();
  if (kinds.mongo === "external") skip.add("mongodb");
  if (kinds.nats === "external") skip.add("nats");
  if (kinds.s3 === "external") skip.add("s3");
  const wanted: Array<{ port: number; what: string; variable: string }> = [];
  for (const key of PORT_KEYS) {
    if (skip.has(key)) continue;
    wanted.push({ port: ports[key], what: key, variable: portVar(key) });
  }
  for (const s of BACKEND_SERVICES) {
    wanted.push({ port: ports.health[s], what: `${s} health endpoint`, variable: portVar(s) });
  }
  for (const w of wanted) {
    if (!(await isPortFree(w.port))) {
      throw new StackStartError(
        `Port ${w.port} (${w.what}) is already in use on 127.0.0.1 by another program. ` +
          `Stop that program or set ${w.variable} to another port.`,
      );
    }
  }
}

/**
 * Stops the gateway (every replica), then the backends, then the balancers in front of them, then the servers, and
 * releases the data directory.
 */
async function stopAll(
  procs: readonly ManagedProcess[],
  paths: DataPaths,
  log: (line: string) => void,
  closeBalancers: () => Promise<void>,
) {
  const running = procs.filter((p) => p.running());
  if (running.length > 0) log("stopping…");
  const isGateway = (p: ManagedProcess) => p.name === "gateway" || p.name.startsWith("gateway-");
  const gateway = running.filter(isGateway);
  const backends = running.filter((p) => !isGateway(p) && !SERVER_NAMES.has(p.name));
  const servers = running.filter((p) => SERVER_NAMES.has(p.name));
  for (const group of [gateway, backends, servers]) {
    if (group === servers) await closeBalancers();
    const results = await Promise.all(group.map(async (p) => ({ p, status: await p.stop() })));
    for (const { p, status } of results) {
      if (status.signal === "SIGKILL") log(`  ${p.name} did not stop within 10 s and was killed`);
      else if (status.code !== 0 && status.signal !== "SIGTERM" && status.code !== null) {
        log(`  ${p.name} ${describeExit(status)} (see ${p.logFile})`);
      }
    }
  }
  releaseDataDir(paths);
  if (running.length > 0) log("stopped");
}

/** What a stack record says about a stack, for `status`. */
export type { StackRecord };
