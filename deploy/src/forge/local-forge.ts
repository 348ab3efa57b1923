import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ManagedProcess } from "../host/child.js";
import { cacheDir, type Env, envValue } from "../host/paths.js";
import { isPortFree } from "../ports/ports.js";
import { StackStartError } from "../stack/wait.js";
import { type BuildContext, ensureTool } from "../tools/go-build.js";
import { createMachineProbe, GITEA, planTool } from "../tools/tools.js";
import { type GiteaServer, startGitea } from "./gitea.js";

// `CONVEYOR_FORGE=gitea npm start`: a Gitea beside the stack, its data in .data/gitea kept across restarts, its URL
// and credentials printed with the stack's (docs/operations.md, "A git forge: Gitea"). Unset, nothing of it runs
// or is built.

/** The forges the launcher can run. */
export type LocalForge = "gitea";

/** The port `npm start`'s Gitea listens on unless GITEA_PORT says otherwise. */
export const DEFAULT_GITEA_PORT = 3000;

/** CONVEYOR_FORGE: unset or blank for none, `gitea`; anything else is refused, naming the variable. */
export function forgeChoice(env: Env): LocalForge | undefined {
  const value = envValue(env, "CONVEYOR_FORGE");
  if (value === undefined) return undefined;
  if (value === "gitea") return value;
  throw new StackStartError(`CONVEYOR_FORGE must be "gitea" or unset, got "${value}"`);
}

/** GITEA_PORT (1 to 65535), else 3000; anything else is refused, naming the variable. */
export function giteaPort(env: Env): number {
  const value = envValue(env, "GITEA_PORT");
  if (value === undefined) return DEFAULT_GITEA_PORT;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65_535) {
    throw new StackStartError(`GITEA_PORT must be a TCP port (1 to 65535), got "${value}"`);
  }
  return port;
}

/**
 * The gitea binary: GITEA_BIN (which must exist), else the cached build, built now when missing (about 6 minutes
 * the first time, with progress messages).
 */
export async function giteaBinary(env: Env, build: BuildContext): Promise<string> {
  const choice = planTool(GITEA, env, cacheDir(env), createMachineProbe(env));
  if (choice.source === "env") {
    if (!existsSync(choice.path))
      throw new StackStartError(`gitea binary ${choice.path} (set by GITEA_BIN) does not exist`);
    return choice.path;
  }
  return ensureTool(GITEA, build);
}

export interface LocalForgeOptions {
  env: Env;
  /** The stack's data folder: Gitea's is `gitea/` in it. */
  dataDir: string;
  binary: string;
  detached: boolean;
  log: (line: string) => void;
  signal?: AbortSignal;
  /** Records Gitea's process with the stack's (stack.json), so that `status` shows it and it never outlives it. */
  onSpawn?: (proc: ManagedProcess) => void;
}

/** Starts `npm start`'s Gitea on GITEA_PORT, its data in <data>/gitea; fails clearly when the port is taken. */
export async function startLocalGitea(opts: LocalForgeOptions): Promise<GiteaServer> {
  const port = giteaPort(opts.env);
  if (!(await isPortFree(port))) {
    throw new StackStartError(
      `Port ${port} (Gitea) is already in use on 127.0.0.1 by another program. Stop it or set GITEA_PORT to another port.`,
    );
  }
  return startGitea({
    binary: opts.binary,
    dataDir: join(opts.dataDir, "gitea"),
    port,
    env: opts.env,
    detached: opts.detached,
    log: opts.log,
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.onSpawn ? { onSpawn: opts.onSpawn } : {}),
  });
}

/** The lines `npm start`'s summary shows of its Gitea. */
export function giteaSummary(gitea: GiteaServer, shortPath: (path: string) => string): string[] {
  return [
    `  Gitea         ${gitea.url}/   (CONVEYOR_FORGE=gitea; data in ${shortPath(gitea.dataDir)}, log ${shortPath(gitea.logFile)})`,
    `  Gitea admin   ${gitea.adminUser.name} / ${gitea.adminUser.password}   (API token ${gitea.token})`,
    "                Its API is under /api/v1 (Authorization: token <token>); its repositories clone over HTTP.",
    "                Add a webhook of type Gitea to a repository, its URL a pipeline's provider.webhook_url.",
  ];
}
