import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type ManagedProcess, spawnManaged } from "../host/child.js";
import type { Env } from "../host/paths.js";
import { getFreePort } from "../ports/ports.js";
import { httpStatus, StackStartError, waitUntil } from "../stack/wait.js";
import {
  type GiteaAdmin,
  type GiteaState,
  giteaAppIni,
  giteaConfigFile,
  giteaStateFile,
  giteaStaticRoot,
  newGiteaState,
  parseGiteaState,
} from "./gitea-config.js";

// A headless Gitea for the webhook tests and `CONVEYOR_FORGE=gitea npm start` (docs/operations.md, "A git forge:
// Gitea"): app.ini written into a data folder, `gitea migrate`, an admin and its access token made with Gitea's own
// CLI, then `gitea web` on 127.0.0.1 until stopped. A data folder is reused: its secrets, admin and token are kept
// in conveyor-gitea.json beside Gitea's data.

/** A running Gitea. */
export interface GiteaServer {
  /** Its base URL, http://127.0.0.1:<port> (no trailing slash); the API is under /api/v1. */
  readonly url: string;
  readonly port: number;
  /** The site administrator (who owns the repositories the helpers create). */
  readonly adminUser: GiteaAdmin;
  /** The admin's access token, every scope: `Authorization: token <token>`. */
  readonly token: string;
  readonly dataDir: string;
  /** Gitea's own output (its requests and webhook deliveries are logged there). */
  readonly logFile: string;
  readonly proc: ManagedProcess;
  /** SIGTERM (Gitea shuts down gracefully), SIGKILL after 10 s. */
  stop(): Promise<void>;
}

export interface StartGiteaOptions {
  /** The gitea binary (the cached build of GITEA, or GITEA_BIN). */
  binary: string;
  /** Its data folder, made when missing and reused when it holds an earlier Gitea's data. */
  dataDir: string;
  /** Its port on 127.0.0.1; a free one (reserved as the stack's are) when not given. */
  port?: number;
  /** The environment Gitea runs with: PATH (git must be on it) and HOME are taken from it. */
  env?: Env;
  /** Its own process group (for `npm start`, so that a terminal's Ctrl-C reaches the launcher only). */
  detached?: boolean;
  timeoutMs?: number;
  signal?: AbortSignal;
  log?: (line: string) => void;
  /** Called with the process as soon as it is spawned, so that it is stopped even if its start then fails. */
  onSpawn?: (proc: ManagedProcess) => void;
}

/** Starts Gitea in its data folder and waits until its API answers. */
export async function startGitea(opts: StartGiteaOptions): Promise<GiteaServer> {
  const dataDir = resolve(opts.dataDir);
  const env = opts.env ?? process.env;
  const log = opts.log ?? (() => {});
  mkdirSync(join(dataDir, "log"), { recursive: true });
  const logFile = join(dataDir, "log", "gitea.log");
  const stateFile = giteaStateFile(dataDir);
  let state: GiteaState;
  try {
    state = parseGiteaState(readFileSync(stateFile, "utf8"), stateFile);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    state = newGiteaState();
  }
  const saveState = () => writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  saveState();

  const port = opts.port ?? (await getFreePort());
  const configFile = giteaConfigFile(dataDir);
  mkdirSync(join(dataDir, "custom", "conf"), { recursive: true });
  const ini = giteaAppIni({
    dataDir,
    port,
    staticRoot: giteaStaticRoot(opts.binary),
    runningAsRoot: process.getuid?.() === 0,
    secrets: state.secrets,
  });
  writeFileSync(configFile, ini, { mode: 0o600 });

  const giteaEnv: NodeJS.ProcessEnv = {
    PATH: env.PATH,
    HOME: env.HOME ?? dataDir,
    USER: env.USER,
    GITEA_WORK_DIR: dataDir,
    GITEA_CUSTOM: join(dataDir, "custom"),
  };
  const where = ["--config", configFile, "--work-path", dataDir];
  const cli = (args: string[]) => runGitea(opts.binary, [...args, ...where], giteaEnv, dataDir, opts.signal);

  await cli(["migrate"]);
  const admin = state.admin;
  const created = await cli([
    "admin",
    "user",
    "create",
    "--admin",
    "--username",
    admin.name,
    "--email",
    admin.email,
    "--password",
    admin.password,
    "--must-change-password=false",
  ]).then(
    () => true,
    (err: Error) => {
      // A data folder reused: the admin is there already.
      if (/already exists/i.test(err.message)) return false;
      throw err;
    },
  );
  if (created) log(`Gitea admin ${admin.name} created`);
  const newToken = async () => {
    const out = await cli([
      "admin",
      "user",
      "generate-access-token",
      "--username",
      admin.name,
      "--token-name",
      `conveyor-${Date.now().toString(36)}`,
      "--scopes",
      "all",
      "--raw",
    ]);
    state.token = accessTokenIn(out);
    saveState();
  };
  if (state.token === undefined || created) await newToken();

  const proc = spawnManaged({
    name: "gitea",
    command: opts.binary,
    args: ["web", ...where],
    env: giteaEnv,
    cwd: dataDir,
    logFile,
    detached: opts.detached ?? false,
  });
  opts.onSpawn?.(proc);
  // A caller that exits without stopping it (an uncaught error, process.exit) must not leave it behind.
  const killOnExit = () => proc.killNow();
  process.on("exit", killOnExit);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntil(async () => (await httpStatus(`${url}/api/v1/version`)) === 200, {
      what: "Gitea",
      proc,
      timeoutMs: opts.timeoutMs ?? 60_000,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    // A kept token Gitea no longer knows (deleted in its settings) is replaced.
    const me = await fetch(`${url}/api/v1/user`, { headers: { authorization: `token ${state.token}` } });
    await me.arrayBuffer();
    if (me.status === 401) await newToken();
  } catch (err) {
    await proc.stop();
    process.off("exit", killOnExit);
    throw err;
  }
  const token = state.token ?? "";
  return {
    url,
    port,
    adminUser: { ...admin },
    token,
    dataDir,
    logFile,
    proc,
    async stop() {
      await proc.stop();
      process.off("exit", killOnExit);
    },
  };
}

/** Runs one of Gitea's CLI commands to completion; resolves with what it printed, rejects with its output. */
function runGitea(
  binary: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  signal: AbortSignal | undefined,
): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      binary,
      args,
      { env, cwd, encoding: "utf8", maxBuffer: 4 * 1024 * 1024, timeout: 120_000, ...(signal ? { signal } : {}) },
      (err, stdout, stderr) => {
        if (!err) return resolvePromise(stdout);
        // The password is an argument of `admin user create`: never repeat the command line.
        const output = `${stderr}\n${stdout}`.trim().split("\n").slice(-15).join("\n");
        reject(new StackStartError(`gitea ${args[0]} ${args[1] ?? ""} failed: ${output || err.message}`));
      },
    );
  });
}

/**
 * The token `gitea admin user generate-access-token --raw` printed: its last line of 40 hex digits (Gitea may print
 * warnings before it, for example about running as root). Pure.
 */
export function accessTokenIn(output: string): string {
  const token = output
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => /^[0-9a-f]{40}$/.test(line))
    .at(-1);
  if (token === undefined) throw new StackStartError("gitea admin user generate-access-token printed no token");
  return token;
}
