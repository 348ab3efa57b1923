import { existsSync, mkdirSync } from "node:fs";
import { type ManagedProcess, spawnManaged } from "../host/child.js";
import { type DataPaths, type Env, envValue } from "../host/paths.js";
import { type BuildContext, ensureTool } from "../tools/go-build.js";
import type { BinaryChoice, MongoPlan, NatsPlan, S3Plan } from "../tools/tools.js";
import type { S3Settings } from "./stack-info.js";
import { httpStatus, StackStartError, tcpAccepts, waitUntil } from "./wait.js";

export interface ServerContext {
  paths: DataPaths;
  env: Env;
  /** Working directory of the started processes. */
  cwd: string;
  detached: boolean;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Records a process as soon as it is spawned, so that it is stopped even if its start then fails. */
  track(proc: ManagedProcess): void;
}

/** A running (or external) server. */
export interface StartedServer {
  /** What runs, for messages: "FerretDB v1.24.2", "mongod", "external". */
  label: string;
  url: string;
  proc?: ManagedProcess;
}

/** Returns a usable binary path: the user's (checked), the cached one, or a freshly built one. */
export async function resolveBinary(choice: BinaryChoice, build: BuildContext): Promise<string> {
  if (choice.source === "build" && choice.spec) return ensureTool(choice.spec, build);
  if (!existsSync(choice.path)) {
    const hint = choice.source === "env" ? ` (set by ${choice.spec?.envVar ?? "an environment variable"})` : "";
    throw new StackStartError(`${choice.tool} binary ${choice.path}${hint} does not exist`);
  }
  return choice.path;
}

function start(ctx: ServerContext, name: string, command: string, args: string[], extraEnv: Env = {}) {
  const proc = spawnManaged({
    name,
    command,
    args,
    env: { ...ctx.env, ...extraEnv },
    cwd: ctx.cwd,
    logFile: `${ctx.paths.logs}/${name}.log`,
    detached: ctx.detached,
  });
  ctx.track(proc);
  return proc;
}

async function waitTcp(ctx: ServerContext, what: string, port: number, proc: ManagedProcess): Promise<void> {
  await waitUntil(() => tcpAccepts("127.0.0.1", port), { what, proc, timeoutMs: ctx.timeoutMs, signal: ctx.signal });
}

/** Checks that a server the user named answers TCP, with an error that names the variable. */
async function checkExternal(variable: string, url: string): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StackStartError(`${variable} is not a URL: "${url}"`);
  }
  // mongodb+srv and multi-host URLs cannot be probed with one TCP connection; the services report them instead.
  if (parsed.protocol === "mongodb+srv:" || url.includes(",")) return;
  const defaultPorts: Record<string, number> = { "mongodb:": 27017, "nats:": 4222, "http:": 80, "https:": 443 };
  const port = parsed.port === "" ? defaultPorts[parsed.protocol] : Number(parsed.port);
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  if (port === undefined || !(await tcpAccepts(host, port, 3000))) {
    throw new StackStartError(`${variable}=${url} is not reachable: nothing accepts connections at ${host}:${port}`);
  }
}

/**
 * The SQLite settings the bundled FerretDB runs with, beside FerretDB's own defaults (WAL, a busy timeout).
 * `temp_store(memory)`: SQLite journals each write statement inside a transaction, so that the statement alone can be
 * undone; a document write touches a page of every index (13 for a build), which passes the journal's 64 KiB and,
 * with temporary files on disk, made SQLite create, write and delete a file for every insert and update. In memory,
 * a create costs the server about a fifth less CPU (README, "The MongoDB-wire server"). What is committed is
 * written and synced to the WAL as before.
 */
export const FERRETDB_SQLITE_PARAMS = "_pragma=temp_store(memory)";

/** The `--sqlite-url` of a FerretDB keeping its databases in `dir`. */
export function ferretDbSqliteUrl(dir: string): string {
  return `file:${dir.replace(/\/+$/, "")}/?${FERRETDB_SQLITE_PARAMS}`;
}

/** Starts the MongoDB-wire server (or checks the user's). The URL has no database: each service picks its own. */
export async function startMongo(
  plan: MongoPlan,
  port: number,
  ctx: ServerContext,
  build: BuildContext,
): Promise<StartedServer> {
  if (plan.kind === "external") {
    await checkExternal("MONGODB_URL", plan.url);
    return { label: "external (MONGODB_URL)", url: plan.url };
  }
  const bin = await resolveBinary(plan.binary, build);
  mkdirSync(ctx.paths.mongo, { recursive: true });
  const proc =
    plan.kind === "mongod"
      ? start(ctx, "mongod", bin, ["--dbpath", ctx.paths.mongo, "--port", String(port), "--bind_ip", "127.0.0.1"])
      : start(ctx, "ferretdb", bin, [
          "--handler=sqlite",
          `--sqlite-url=${ferretDbSqliteUrl(ctx.paths.mongo)}`,
          `--listen-addr=127.0.0.1:${port}`,
          "--telemetry=disable",
          "--debug-addr=-",
          "--state-dir=-",
        ]);
  const label = plan.kind === "mongod" ? "mongod" : "FerretDB (SQLite)";
  await waitTcp(ctx, label, port, proc);
  return { label, url: `mongodb://127.0.0.1:${port}`, proc };
}

/** Starts nats-server with JetStream (or checks the user's). */
export async function startNats(
  plan: NatsPlan,
  port: number,
  ctx: ServerContext,
  build: BuildContext,
): Promise<StartedServer> {
  if (plan.kind === "external") {
    await checkExternal("NATS_URL", plan.url);
    return { label: "external (NATS_URL)", url: plan.url };
  }
  const bin = await resolveBinary(plan.binary, build);
  mkdirSync(ctx.paths.nats, { recursive: true });
  const proc = start(ctx, "nats-server", bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", ctx.paths.nats]);
  await waitTcp(ctx, "nats-server", port, proc);
  return { label: "nats-server (JetStream)", url: `nats://127.0.0.1:${port}`, proc };
}

/** S3 credentials and bucket: S3_ACCESS_KEY, S3_SECRET_KEY, S3_BUCKET, S3_REGION, with local defaults. */
export function s3Settings(env: Env, endpoint: string, external: boolean): S3Settings {
  const accessKey = envValue(env, "S3_ACCESS_KEY");
  const secretKey = envValue(env, "S3_SECRET_KEY");
  if (external && (accessKey === undefined || secretKey === undefined)) {
    throw new StackStartError("S3_ENDPOINT is set: also set S3_ACCESS_KEY and S3_SECRET_KEY for that server");
  }
  return {
    endpoint,
    accessKey: accessKey ?? "conveyor",
    secretKey: secretKey ?? "conveyor-secret",
    bucket: envValue(env, "S3_BUCKET") ?? "conveyor-artifacts",
    region: envValue(env, "S3_REGION") ?? "us-east-1",
  };
}

/** Starts the S3 server, versitygw by default or MinIO with MINIO_BIN (or checks the user's). */
export async function startS3(
  plan: S3Plan,
  settings: S3Settings,
  port: number,
  ctx: ServerContext,
  build: BuildContext,
): Promise<StartedServer> {
  if (plan.kind === "external") {
    await checkExternal("S3_ENDPOINT", plan.endpoint);
    return { label: "external (S3_ENDPOINT)", url: plan.endpoint };
  }
  const bin = await resolveBinary(plan.binary, build);
  mkdirSync(ctx.paths.s3, { recursive: true });
  const url = `http://127.0.0.1:${port}`;
  let proc: ManagedProcess;
  if (plan.kind === "minio") {
    proc = start(
      ctx,
      "minio",
      bin,
      ["server", ctx.paths.s3, "--address", `127.0.0.1:${port}`, "--console-address", "127.0.0.1:0"],
      {
        MINIO_ROOT_USER: settings.accessKey,
        MINIO_ROOT_PASSWORD: settings.secretKey,
        MINIO_BROWSER: "off",
        MINIO_UPDATE: "off",
      },
    );
  } else {
    proc = start(ctx, "versitygw", bin, ["--quiet", "--port", `127.0.0.1:${port}`, "posix", ctx.paths.s3], {
      ROOT_ACCESS_KEY: settings.accessKey,
      ROOT_SECRET_KEY: settings.secretKey,
      VGW_REGION: settings.region,
    });
  }
  const label = plan.kind === "minio" ? "MinIO" : "versitygw (S3 on the file system)";
  // Any HTTP answer (403 for an anonymous request) means the S3 API is up.
  await waitUntil(async () => (await httpStatus(`${url}/`)) !== undefined, {
    what: label,
    proc,
    timeoutMs: ctx.timeoutMs,
    signal: ctx.signal,
  });
  return { label, url, proc };
}
