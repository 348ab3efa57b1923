import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cacheDir, cachedToolPath, envValue, FERRETDB, ferretDbSqliteUrl } from "@conveyor/deploy";
import type { MongoClient } from "mongodb";
import type { Precondition } from "./not-run.js";

// The bundled FerretDB (FerretDB v1.24.2 with the patches in deploy/ferretdb, its version "-conveyor.N") and its
// oracle: the same binary started with --test-disable-pushdown, which evaluates every filter and sort in Go. The
// suites that hold the patches to FerretDB's own evaluation (test/mongo-differential.int.test.ts,
// test/mongo-indexes.int.test.ts) need both; with another MongoDB-wire server (MONGODB_URL, MONGOD_BIN, an unpatched
// FERRETDB_BIN) they are reported as not run (test/support/not-run.ts), never as passed.

/** Set by the test stack's global setup (test/setup/global-setup.ts): which MongoDB-wire server the stack runs. */
export const MONGO_SERVER_VAR = "CONVEYOR_TEST_MONGO_SERVER";

/** How the bundled FerretDB describes itself (describeMongoServer). */
export const BUNDLED_FERRETDB = `FerretDB ${FERRETDB.version}`;

/** A connected server as "FerretDB <its version>" or "MongoDB <its version>" (from buildInfo). */
export async function describeMongoServer(client: MongoClient): Promise<string> {
  const info = await client.db("admin").command({ buildInfo: 1 });
  if (typeof info.ferretdbVersion === "string") return `FerretDB ${info.ferretdbVersion}`;
  return `MongoDB ${String(info.version)}`;
}

/** The version a FerretDB binary reports (`--version`), or why it could not be read. */
function binaryVersion(bin: string): { version: string } | { error: string } {
  try {
    const out = execFileSync(bin, ["--version"], { encoding: "utf8", timeout: 10_000 });
    const version = /^version: (\S+)$/m.exec(out)?.[1];
    return version ? { version } : { error: `\`${bin} --version\` names no version` };
  } catch (err) {
    return { error: `\`${bin} --version\` failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/**
 * The precondition of the oracle suites: the stack runs the bundled FerretDB, and the binary to start as its oracle
 * (FERRETDB_BIN, else the tool cache's, as the launcher chooses it) is there and is the same version.
 */
export function ferretDbOracle(env: NodeJS.ProcessEnv = process.env): Precondition & { bin: string } {
  const name = `the bundled FerretDB (${FERRETDB.version}) as the stack's MongoDB-wire server, and its oracle`;
  const bin = envValue(env, FERRETDB.envVar) ?? cachedToolPath(cacheDir(env), FERRETDB);
  const server = env[MONGO_SERVER_VAR];
  let missing: string | undefined;
  if (!server) missing = `${MONGO_SERVER_VAR} is not set (the test stack's global setup sets it)`;
  else if (server !== BUNDLED_FERRETDB) missing = `the stack's MongoDB-wire server is ${server}`;
  else if (!existsSync(bin)) missing = `there is no FerretDB binary at ${bin} to start as the oracle`;
  else {
    const version = binaryVersion(bin);
    if ("error" in version) missing = version.error;
    else if (version.version !== FERRETDB.version) missing = `the oracle binary ${bin} is FerretDB ${version.version}`;
  }
  return { name, missing, bin };
}

/** A FerretDB process started by a test. */
export interface FerretDbProcess {
  url: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.connect(port, "127.0.0.1");
  });
}

/** Starts FerretDB (SQLite, a temporary folder, a free port); `--test-disable-pushdown` with disablePushdown. */
export async function startFerretDb(bin: string, disablePushdown: boolean): Promise<FerretDbProcess> {
  const dir = mkdtempSync(join(tmpdir(), "conveyor-ferretdb-"));
  const port = await freePort();
  const args = [
    "--handler=sqlite",
    `--sqlite-url=${ferretDbSqliteUrl(dir)}`,
    `--listen-addr=127.0.0.1:${port}`,
    "--telemetry=disable",
    "--debug-addr=-",
    "--state-dir=-",
    "--log-level=error",
  ];
  if (disablePushdown) args.push("--test-disable-pushdown");
  const proc: ChildProcess = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  proc.stderr?.on("data", (chunk) => {
    stderr = (stderr + String(chunk)).slice(-4000);
  });
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    proc.once("exit", () => {
      exited = true;
      resolve();
    }),
  );
  const stop = async () => {
    if (!exited) {
      proc.kill("SIGTERM");
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exit, new Promise((r) => (timer = setTimeout(r, 5000)))]);
      clearTimeout(timer);
      if (!exited) proc.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 20_000;
  while (!(await accepts(port))) {
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(`FerretDB did not start (${bin}): ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `mongodb://127.0.0.1:${port}`, stop };
}
