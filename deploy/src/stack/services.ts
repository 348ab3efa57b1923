import { existsSync } from "node:fs";
import { join } from "node:path";
import { BACKEND_SERVICES, type BackendService, serviceUrlVar } from "@conveyor/runtime";
import type { ManagedProcess } from "../host/child.js";
import { spawnManaged } from "../host/child.js";
import { type Env, envValue } from "../host/paths.js";
import type { StackPorts } from "../ports/ports.js";
import type { S3Settings } from "./stack-info.js";
import { httpStatus, StackStartError, waitUntil } from "./wait.js";

/** The seven processes, in the order they start. */
export const PROCESS_NAMES = [...BACKEND_SERVICES, "gateway"] as const;
export type ProcessName = (typeof PROCESS_NAMES)[number];

/** What every process of the stack is told about the others. */
export interface Topology {
  ports: StackPorts;
  mongodbUrl: string;
  natsUrl: string;
  s3: S3Settings;
  logLevel: string;
  /** The address the gateway binds (GATEWAY_HOST); the backends always bind 127.0.0.1. */
  gatewayHost: string;
  /** Base of the `url` fields in REST answers (PUBLIC_URL). */
  publicUrl: string;
  /** Base of the `web_url` fields (WEB_URL); the gateway's own default when unset. */
  webUrl?: string;
  /** The CREDENTIALS_ENCRYPTION_KEY of the services that seal values (stack/credentials-key.ts), when the launcher has one. */
  credentialsKey?: string;
  /** The gateway's certificate and key (stack/local-tls.ts) and TLS port; none: plain HTTP only. */
  tls?: { certFile: string; keyFile: string; port: number };
}

/** The key values at rest are sealed with, which only the services sealing them may hold. */
const CREDENTIALS_KEY_VARS = ["CREDENTIALS_ENCRYPTION_KEY", "CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS"];
/** The services sealing values at rest: notifications (source-provider credentials), agents (cluster secrets). */
const KEYED_SERVICES: readonly ProcessName[] = ["notifications", "agents"];

/** Variables of the user's environment that must not leak into one process's config from the launcher's shell. */
const PER_PROCESS_VARS = [
  "HOST",
  "PORT",
  "HEALTH_PORT",
  "MONGODB_DATABASE",
  "TLS_CERT_FILE",
  "TLS_KEY_FILE",
  "TLS_PORT",
];

/** Builds the topology of a stack from its ports, servers and the launcher's environment. */
export function createTopology(
  env: Env,
  ports: StackPorts,
  servers: { mongodbUrl: string; natsUrl: string; s3: S3Settings },
): Topology {
  const webUrl = envValue(env, "WEB_URL");
  return {
    ports,
    ...servers,
    logLevel: envValue(env, "LOG_LEVEL") ?? "info",
    gatewayHost: envValue(env, "GATEWAY_HOST") ?? "127.0.0.1",
    publicUrl: (envValue(env, "PUBLIC_URL") ?? `http://127.0.0.1:${ports.gateway}`).replace(/\/$/, ""),
    ...(webUrl === undefined ? {} : { webUrl }),
  };
}

/** The base URL of each backend service. */
export function serviceUrls(ports: StackPorts): Record<BackendService, string> {
  const urls = {} as Record<BackendService, string>;
  for (const s of BACKEND_SERVICES) urls[s] = `http://127.0.0.1:${ports[s]}`;
  return urls;
}

/**
 * One replica of a process when the stack runs several (CONVEYOR_REPLICAS): its own name (for example
 * "builds-2", also its log file's) and ports; a balancer listens on the process's usual ports in front of them.
 */
export interface ReplicaSlot {
  name: string;
  port: number;
  /** The health port of a backend replica (unused for the gateway). */
  healthPort: number;
}

/**
 * The environment of one process: the launcher's, minus per-process settings, plus its own configuration. A replica
 * listens on its slot's ports; the other services' URLs stay the usual ports, where the balancers are.
 */
export function processEnv(name: ProcessName, topo: Topology, base: Env, slot?: ReplicaSlot): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const key of PER_PROCESS_VARS) delete env[key];
  // The credentials key is the sealing services' alone (docs/security.md#source-provider-credentials, #cluster-secrets).
  if (!KEYED_SERVICES.includes(name)) for (const key of CREDENTIALS_KEY_VARS) delete env[key];
  if (KEYED_SERVICES.includes(name) && topo.credentialsKey !== undefined)
    env.CREDENTIALS_ENCRYPTION_KEY = topo.credentialsKey;
  const urls = serviceUrls(topo.ports);
  for (const s of BACKEND_SERVICES) env[serviceUrlVar(s)] = urls[s];
  Object.assign(env, {
    NATS_URL: topo.natsUrl,
    MONGODB_URL: topo.mongodbUrl,
    LOG_LEVEL: topo.logLevel,
    NODE_ENV: base.NODE_ENV ?? "production",
  });
  if (name === "gateway") {
    const port = slot?.port ?? topo.ports.gateway;
    Object.assign(env, { HOST: topo.gatewayHost, PORT: String(port), PUBLIC_URL: topo.publicUrl });
    // A gateway replica's TLS port is its slot's second port (a gateway has no health port); a balancer is in front.
    if (topo.tls) {
      Object.assign(env, {
        TLS_CERT_FILE: topo.tls.certFile,
        TLS_KEY_FILE: topo.tls.keyFile,
        TLS_PORT: String(slot?.healthPort ?? topo.tls.port),
      });
    }
    // Signed artifact URLs point at the store (or S3_PUBLIC_URL), and ARTIFACTS_PROXY forwards to it.
    Object.assign(env, { S3_ENDPOINT: topo.s3.endpoint, S3_BUCKET: topo.s3.bucket });
    if (topo.webUrl !== undefined) env.WEB_URL = topo.webUrl;
    return env;
  }
  Object.assign(env, {
    HOST: "127.0.0.1",
    PORT: String(slot?.port ?? topo.ports[name]),
    HEALTH_PORT: String(slot?.healthPort ?? topo.ports.health[name]),
  });
  if (name === "artifacts") {
    Object.assign(env, {
      S3_ENDPOINT: topo.s3.endpoint,
      S3_ACCESS_KEY: topo.s3.accessKey,
      S3_SECRET_KEY: topo.s3.secretKey,
      S3_BUCKET: topo.s3.bucket,
      S3_REGION: topo.s3.region,
    });
  }
  if (name === "notifications") {
    // The links in what it sends (a build's url and web_url) are the gateway's.
    env.PUBLIC_URL = topo.publicUrl;
    if (topo.webUrl !== undefined) env.WEB_URL = topo.webUrl;
  }
  return env;
}

/** The URL that answers 200 once a process (or one replica of it) is ready. */
export function readinessUrl(name: ProcessName, ports: StackPorts, slot?: ReplicaSlot): string {
  return name === "gateway"
    ? `http://127.0.0.1:${slot?.port ?? ports.gateway}/healthz`
    : `http://127.0.0.1:${slot?.healthPort ?? ports.health[name]}/readyz`;
}

export interface ProcessContext {
  repoRoot: string;
  logsDir: string;
  env: Env;
  detached: boolean;
  timeoutMs: number;
  signal?: AbortSignal;
  track(proc: ManagedProcess): void;
}

/**
 * Starts one of the seven processes (`node services/<name>/dist/main.js`), or one replica of it, and waits until it
 * is ready.
 */
export async function startProcess(
  name: ProcessName,
  topo: Topology,
  ctx: ProcessContext,
  slot?: ReplicaSlot,
): Promise<ManagedProcess> {
  const main = join(ctx.repoRoot, "services", name, "dist", "main.js");
  if (!existsSync(main)) {
    throw new StackStartError(`${main} is missing: run \`npm run build\` first (\`npm start\` builds for you)`);
  }
  const procName = slot?.name ?? name;
  const proc = spawnManaged({
    name: procName,
    command: process.execPath,
    args: ["--enable-source-maps", main],
    env: processEnv(name, topo, ctx.env, slot),
    cwd: ctx.repoRoot,
    logFile: join(ctx.logsDir, `${procName}.log`),
    detached: ctx.detached,
  });
  ctx.track(proc);
  const url = readinessUrl(name, topo.ports, slot);
  await waitUntil(async () => (await httpStatus(url)) === 200, {
    what: procName,
    proc,
    timeoutMs: ctx.timeoutMs,
    signal: ctx.signal,
  });
  return proc;
}
