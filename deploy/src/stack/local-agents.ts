import { mkdirSync, writeFileSync } from "node:fs";
import { hostname as osHostname } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describeExit, type ExitStatus, type ManagedProcess, spawnManaged } from "../host/child.js";
import { type Env, envValue } from "../host/paths.js";

/** How many local agents `npm start` runs: CONVEYOR_LOCAL_AGENTS, 1 by default, 0 for none. */
export const LOCAL_AGENTS_VAR = "CONVEYOR_LOCAL_AGENTS";
export const MAX_LOCAL_AGENTS = 32;

/** Raised when CONVEYOR_LOCAL_AGENTS is not a whole number from 0 to 32. */
export class LocalAgentsConfigError extends Error {
  override name = "LocalAgentsConfigError";
}

/** Reads CONVEYOR_LOCAL_AGENTS: unset or blank is 1; otherwise a whole number from 0 to 32. */
export function localAgentCount(env: Env): number {
  const raw = envValue(env, LOCAL_AGENTS_VAR);
  if (raw === undefined) return 1;
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n > MAX_LOCAL_AGENTS) {
    throw new LocalAgentsConfigError(
      `${LOCAL_AGENTS_VAR} must be a whole number from 0 to ${MAX_LOCAL_AGENTS} (how many local agents npm start ` +
        `runs; 0 for none), not "${raw}".`,
    );
  }
  return n;
}

/** The folders of one agent, under <data>/agents/<id>/. */
export interface AgentDirs {
  root: string;
  builds: string;
  hooks: string;
  plugins: string;
  sockets: string;
}

/** The folders of local agent `id` under the data directory. */
export function agentDirs(dataDir: string, id: string): AgentDirs {
  const root = join(dataDir, "agents", id);
  return {
    root,
    builds: join(root, "builds"),
    hooks: join(root, "hooks"),
    plugins: join(root, "plugins"),
    sockets: join(root, "sockets"),
  };
}

/** The configuration file every agent of the stack is given: an empty one (see agentStartArgs). */
export function agentConfigFile(dataDir: string): string {
  return join(dataDir, "agents", "buildkite-agent.cfg");
}

/** The name of local agent n (from 1): "<hostname>-local-<n>". */
export function localAgentName(hostname: string, n: number): string {
  return `${hostname}-local-${n}`;
}

export interface AgentStartOptions {
  /** The agent API, for example http://127.0.0.1:8080/v3. */
  endpoint: string;
  name: string;
  dirs: AgentDirs;
  /** The configuration file (agentConfigFile). */
  config: string;
  /** The registration token on the command line; leave it out to pass it as BUILDKITE_AGENT_TOKEN (agentEnv). */
  token?: string;
  /** Its tags; `queue=default` when absent. */
  tags?: readonly string[];
}

/**
 * The agent's ping mode for an endpoint: `auto` (stream pings over HTTP/2, polling when the stream fails) over
 * https, `poll-only` over plain http, where the agent's gRPC stream cannot work (it needs HTTP/2, so TLS).
 */
export function pingModeFor(endpoint: string): "auto" | "poll-only" {
  return endpoint.startsWith("https:") ? "auto" : "poll-only";
}

/**
 * The arguments of `buildkite-agent start` for an agent of the stack (every flag checked against v3.137.0's
 * `start --help`):
 * - `--ping-mode` `auto` over https (pings stream over HTTP/2: the gateway's TLS port), `poll-only` over plain
 *   http (pingModeFor);
 * - `--tags queue=default`: the queue pipeline steps target when they name none;
 * - its own build, hooks, plugins and sockets folders, so that the agent neither reads the machine's
 *   /etc/buildkite-agent/hooks nor shares ~/.buildkite-agent with a real agent;
 * - `--config` an empty file: otherwise a buildkite-agent.cfg of a real agent on this machine (in ~/.buildkite-agent,
 *   /etc/buildkite-agent, …) would add its settings (spawn, tags, disconnect-after-job, experiments …);
 * - `--no-color`: its log goes to a file.
 * Left out on purpose: --skip-checkout, --no-plugins, --no-git-submodules, --no-ssh-keyscan (each would take a
 * feature from the pipelines a user runs; with local repositories none of them reaches the network anyway), and
 * --no-multipart-artifact-upload (the agent uploads in parts only when the server asks for it).
 */
export function agentStartArgs(opts: AgentStartOptions): string[] {
  return [
    "start",
    ...(opts.token === undefined ? [] : ["--token", opts.token]),
    "--endpoint",
    opts.endpoint,
    "--name",
    opts.name,
    "--tags",
    (opts.tags ?? ["queue=default"]).join(","),
    "--ping-mode",
    pingModeFor(opts.endpoint),
    "--build-path",
    opts.dirs.builds,
    "--hooks-path",
    opts.dirs.hooks,
    "--plugins-path",
    opts.dirs.plugins,
    "--sockets-path",
    opts.dirs.sockets,
    "--config",
    opts.config,
    "--no-color",
  ];
}

/**
 * The environment of a local agent: the launcher's without any BUILDKITE_* variable (a shell set up for a real
 * agent must not redirect ours: every agent flag reads one, and jobs inherit them), plus the registration token,
 * which is kept out of the command line so that `ps` does not show it to other users of the machine.
 */
export function agentEnv(base: Env, token: string, trustFile?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(base)) {
    if (value !== undefined && !key.startsWith("BUILDKITE_")) env[key] = value;
  }
  env.BUILDKITE_AGENT_TOKEN = token;
  // The stack's local CA (with the system's roots) for the gateway's TLS port (stack/local-tls.ts).
  if (trustFile !== undefined) env.SSL_CERT_FILE = trustFile;
  return env;
}

/** Restart delays: 1 s after the first exit in a row, doubling up to 30 s. */
export const RESTART_DELAY_MS = { first: 1_000, max: 30_000 } as const;
/** An agent that ran this long before it exited starts a new series of delays. */
export const STABLE_RUN_MS = 60_000;

/** The delay before restarting an agent that has exited `exitsInARow` times (from 1) without running stably. */
export function restartDelayMs(exitsInARow: number): number {
  const doubled = RESTART_DELAY_MS.first * 2 ** Math.max(0, Math.min(exitsInARow - 1, 10));
  return Math.min(doubled, RESTART_DELAY_MS.max);
}

/** What to do when a local agent exits on its own: restart it (after a delay), or leave it stopped. */
export function exitDecision(status: ExitStatus): "restart" | "leave" {
  // Exit code 0 is a clean disconnect (for example an agent stopped through the REST API): leave it stopped, as
  // systemd's Restart=on-failure would. Anything else, a failure or a signal, restarts it.
  return status.code === 0 && status.signal === null && status.error === undefined ? "leave" : "restart";
}

/** A word for a shell, quoted when it needs to be. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** A command line for a shell, each word quoted when it needs to be. */
export function shellCommand(command: string, args: readonly string[]): string {
  return [command, ...args].map(shellWord).join(" ");
}

/** The same over several lines, one option (and its value) a line, continued with backslashes. */
export function shellCommandLines(command: string, args: readonly string[]): string[] {
  const lines: string[][] = [[command]];
  for (const arg of args) {
    if (arg.startsWith("--")) lines.push([]);
    lines[lines.length - 1]?.push(arg);
  }
  return lines.map((words, i) => {
    const text = words.map(shellWord).join(" ");
    return `${i === 0 ? "" : "  "}${text}${i < lines.length - 1 ? " \\" : ""}`;
  });
}

export interface LocalAgentsOptions {
  count: number;
  /** The buildkite-agent binary. */
  bin: string;
  endpoint: string;
  /** SSL_CERT_FILE of the agents, for an https endpoint signed by the stack's local CA. */
  trustFile?: string;
  token: string;
  dataDir: string;
  logsDir: string;
  env: Env;
  /** Their own process groups, so that a terminal's Ctrl-C reaches only the launcher (as for the stack). */
  detached: boolean;
  log: (line: string) => void;
  /** Told about every process started (the stack records it in stack.json). */
  onSpawn?: (proc: ManagedProcess) => void;
  hostname?: string;
}

export interface LocalAgents {
  readonly agents: ReadonlyArray<{ name: string; logFile: string }>;
  /**
   * SIGTERM (an idle agent disconnects at once; a busy one finishes its job first), SIGQUIT after 5 s (the job is
   * canceled, the agent disconnects), SIGKILL 15 s later. No restarts from then on.
   */
  stop(): Promise<void>;
}

/** Starts local agents and restarts each one that exits with a failure, with a growing delay. */
export function startLocalAgents(opts: LocalAgentsOptions): LocalAgents {
  const host = opts.hostname ?? osHostname();
  const config = agentConfigFile(opts.dataDir);
  // Written even for no local agents: the command the summary shows for starting one by hand names it too.
  mkdirSync(join(opts.dataDir, "agents"), { recursive: true });
  writeFileSync(config, "# The agents of `npm start` are configured by their command line only.\n");
  const env = agentEnv(opts.env, opts.token, opts.trustFile);
  let stopping = false;
  const supervisors = Array.from({ length: opts.count }, (_, i) => {
    const n = i + 1;
    const name = localAgentName(host, n);
    const dirs = agentDirs(opts.dataDir, String(n));
    const logFile = join(opts.logsDir, `agent-${n}.log`);
    const args = agentStartArgs({ endpoint: opts.endpoint, name, dirs, config });
    let proc: ManagedProcess | undefined;
    let timer: NodeJS.Timeout | undefined;
    let exitsInARow = 0;

    /** After an exit (or a failed spawn): schedule the next start, saying so only at the turns of a series. */
    const scheduleRestart = (ranMs: number, what: string) => {
      exitsInARow = ranMs >= STABLE_RUN_MS ? 1 : exitsInARow + 1;
      const delay = restartDelayMs(exitsInARow);
      if (exitsInARow === 1) {
        opts.log(`local agent ${name} ${what}; restarting it in ${delay / 1000} s (log: ${logFile})`);
      } else if (delay === RESTART_DELAY_MS.max && restartDelayMs(exitsInARow - 1) < RESTART_DELAY_MS.max) {
        opts.log(`local agent ${name} keeps exiting; restarting it every ${delay / 1000} s, quietly (log: ${logFile})`);
      }
      timer = setTimeout(launch, delay);
    };

    const launch = () => {
      timer = undefined;
      if (stopping) return;
      const started = Date.now();
      let p: ManagedProcess;
      try {
        for (const d of [opts.logsDir, dirs.builds, dirs.hooks, dirs.plugins, dirs.sockets]) {
          mkdirSync(d, { recursive: true });
        }
        p = spawnManaged({
          name: `agent-${n}`,
          command: opts.bin,
          args,
          env,
          cwd: dirs.root,
          logFile,
          detached: opts.detached,
        });
      } catch (err) {
        scheduleRestart(0, `could not be started (${err instanceof Error ? err.message : String(err)})`);
        return;
      }
      proc = p;
      opts.onSpawn?.(p);
      void p.exited.then((status) => {
        if (stopping) return;
        if (exitDecision(status) === "leave") {
          opts.log(`local agent ${name} disconnected (${describeExit(status)}); it is not restarted`);
          return;
        }
        const reason = lastLine(p.logTail(5));
        scheduleRestart(Date.now() - started, `${describeExit(status)}${reason ? `: ${reason}` : ""}`);
      });
    };

    const stop = async () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      const p = proc;
      if (!p?.running()) return;
      p.kill("SIGTERM");
      if (await exitsWithin(p, 5_000)) return;
      opts.log(`local agent ${name} is still running a job; canceling it`);
      p.kill("SIGQUIT");
      if (await exitsWithin(p, 15_000)) return;
      opts.log(`local agent ${name} did not stop and was killed`);
      p.killNow();
      await p.exited;
    };

    launch();
    return { name, logFile, stop };
  });

  return {
    agents: supervisors.map(({ name, logFile }) => ({ name, logFile })),
    async stop() {
      stopping = true;
      await Promise.all(supervisors.map((s) => s.stop()));
    },
  };
}

/** Whether `proc` exits within `ms`. */
async function exitsWithin(proc: ManagedProcess, ms: number): Promise<boolean> {
  const controller = new AbortController();
  // The timer is aborted once the race is decided; that abort is its only way to fail.
  const timeout = sleep(ms, false, { signal: controller.signal }).catch((err: unknown) => {
    if ((err as Error).name !== "AbortError") throw err;
    return false;
  });
  try {
    return await Promise.race([proc.exited.then(() => true), timeout]);
  } finally {
    controller.abort();
  }
}

/** The last non-empty line of a log tail, for a one-line message. */
function lastLine(tail: string): string {
  const lines = tail.split("\n").filter((l) => l.trim() !== "" && !l.startsWith("=== "));
  return (lines.at(-1) ?? "").trim();
}
