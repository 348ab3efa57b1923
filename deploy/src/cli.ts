#!/usr/bin/env node
import { realpathSync } from "node:fs";
import { hostname } from "node:os";
import { dirname, isAbsolute, relative } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { IdentityService } from "@conveyor/proto/identity";
import { createServiceClient } from "@conveyor/runtime";
import { bootstrapStack } from "./bootstrap/bootstrap.js";
import type { Credentials } from "./bootstrap/credentials.js";
import { firstBuildWalkthrough } from "./bootstrap/first-build.js";
import { adminSignInLink, stackWebUrl } from "./bootstrap/sign-in-link.js";
import type { GiteaServer } from "./forge/gitea.js";
import { forgeChoice, giteaBinary, giteaSummary, startLocalGitea } from "./forge/local-forge.js";
import { describeExit } from "./host/child.js";
import { cacheDir, dataPaths, defaultDataDir, findRepoRoot } from "./host/paths.js";
import { formatLogTail } from "./logs/log-format.js";
import {
  agentConfigFile,
  agentDirs,
  agentStartArgs,
  type LocalAgents,
  LocalAgentsConfigError,
  localAgentCount,
  shellCommandLines,
  startLocalAgents,
} from "./stack/local-agents.js";
import { type Stack, startStack } from "./stack/stack.js";
import { isRecordedProcessAlive, readStackFile, StackAlreadyRunningError } from "./stack/stack-file.js";
import type { StackInfo } from "./stack/stack-info.js";
import { StackStartError } from "./stack/wait.js";
import { ToolchainError } from "./tools/go-build.js";

const USAGE = `usage: conveyor-stack <command>

  start    start the whole stack in the foreground (Ctrl-C stops it), bootstrap and print credentials
  stop     stop the stack that \`start\` runs from this data directory
  status   tell whether a stack runs from this data directory, and where
  check    exit 1, saying so, if a stack runs from this data directory`;

const say = (line: string) => process.stdout.write(`conveyor: ${line}\n`);
const fail = (line: string) => process.stderr.write(`conveyor: ${line}\n`);

/** Runs a launcher command; resolves with the process exit code. */
export async function main(argv: readonly string[], repoRoot = findRepoRoot(here())): Promise<number> {
  const dataDir = defaultDataDir(repoRoot, process.env);
  switch (argv[0]) {
    case "start":
      return start(repoRoot, dataDir);
    case "stop":
      return stop(dataDir);
    case "status":
      return status(dataDir);
    case "check":
      return check(dataDir);
    default:
      process.stderr.write(`${USAGE}\n`);
      return argv[0] === undefined || argv[0] === "help" || argv[0] === "--help" ? 0 : 2;
  }
}

function here(): string {
  return dirname(fileURLToPath(import.meta.url));
}

async function start(repoRoot: string, dataDir: string): Promise<number> {
  const controller = new AbortController();
  let signalled: string | undefined;
  let wake: (() => void) | undefined;
  const signalReceived = new Promise<void>((resolve) => {
    wake = resolve;
  });
  // The launcher may receive the same Ctrl-C twice (from the terminal and forwarded by npm): later signals only
  // say that stopping is under way; every stop step is bounded, so it always finishes.
  const onSignal = (reason: string) => {
    if (signalled) {
      say("still stopping, please wait…");
      return;
    }
    signalled = reason;
    say(`${reason} received`);
    controller.abort();
    wake?.();
  };
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  for (const sig of signals) process.on(sig, onSignal);
  // `npm start` runs this under `sh -c`, and a SIGTERM to npm kills npm and the shell without reaching this
  // process: being re-parented means whoever started the stack is gone, so stop it as if signalled.
  const parent = process.ppid;
  const orphanWatch = setInterval(() => {
    if (process.ppid !== parent) onSignal("exit of the parent process");
  }, 1000);
  orphanWatch.unref();

  let stack: Stack | undefined;
  let agents: LocalAgents | undefined;
  let gitea: GiteaServer | undefined;
  // Stops the local agents first (they disconnect from the gateway), then the forge, then the stack.
  const stopAll = async () => {
    await agents?.stop();
    await gitea?.stop();
    await stack?.stop();
  };
  try {
    const agentCount = localAgentCount(process.env);
    say(`data directory ${shortPath(dataDir)}`);
    // CONVEYOR_FORGE=gitea: Gitea is built (first time only) before anything starts, so that a failure stops early.
    const forgeBin =
      forgeChoice(process.env) === "gitea"
        ? await giteaBinary(process.env, {
            cache: cacheDir(process.env),
            logsDir: dataPaths(dataDir).logs,
            env: process.env,
            log: say,
            signal: controller.signal,
          })
        : undefined;
    stack = await startStack({
      repoRoot,
      dataDir,
      ports: "default",
      detached: true,
      log: say,
      signal: controller.signal,
    });
    if (signalled) {
      await stack.stop();
      return 0;
    }
    say("bootstrapping the organization, admin user and tokens…");
    const { credentials } = await bootstrapStack(stack.info, { log: (line) => say(`  ${line}`) });
    const webUrl = stackWebUrl(stack.info, process.env);
    const identity = createServiceClient(IdentityService, stack.info.serviceUrls.identity);
    const signIn = await adminSignInLink(identity, webUrl, credentials.user.id);
    if (forgeBin && !signalled) {
      const running = stack;
      say("starting Gitea (CONVEYOR_FORGE=gitea)…");
      gitea = await startLocalGitea({
        env: process.env,
        dataDir,
        binary: forgeBin,
        detached: true,
        log: (line) => say(`  ${line}`),
        signal: controller.signal,
        onSpawn: (proc) => running.adopt(proc),
      });
    }
    if (!signalled) {
      const running = stack;
      if (agentCount > 0) say(`starting ${agentCount} local agent${agentCount === 1 ? "" : "s"}…`);
      agents = startLocalAgents({
        count: agentCount,
        bin: running.info.agentBin,
        // Over TLS when the stack has it: the agents stream their pings (HTTP/2) and poll only when that fails.
        endpoint: running.info.agentTlsUrl ?? running.info.agentUrl,
        ...(running.info.trustFile ? { trustFile: running.info.trustFile } : {}),
        token: credentials.agentToken.secret,
        dataDir: running.info.dataDir,
        logsDir: running.info.logsDir,
        env: process.env,
        detached: true,
        log: say,
        onSpawn: (proc) => running.adopt(proc),
      });
      const forgeLines = gitea ? giteaSummary(gitea, shortPath) : [];
      printSummary(running.info, credentials, agents, { webUrl, signInUrl: signIn.url }, forgeLines);
    }
    const outcome = await Promise.race([signalReceived.then(() => undefined), stack.unexpectedExit]);
    if (outcome) {
      fail(
        `${outcome.proc.name} ${describeExit(outcome.status)} and ${outcome.reason}, so the launcher gave up on it; its log is ${outcome.proc.logFile}`,
      );
      printTail(outcome.proc.logTail());
      fail("stopping the rest of the stack");
      await stopAll();
      return 1;
    }
    await stopAll();
    return 0;
  } catch (err) {
    await stopAll();
    if (signalled) return 0;
    if (err instanceof StackAlreadyRunningError || err instanceof LocalAgentsConfigError) {
      fail(err.message);
      return 1;
    }
    fail(`start failed: ${err instanceof Error ? err.message : String(err)}`);
    if (err instanceof StackStartError && err.logTail) printTail(err.logTail);
    fail(
      `Fix the cause above and run \`npm start\` again. Every process logs to ${shortPath(dataPaths(dataDir).logs)}/<name>.log.`,
    );
    // An error the launcher did not foresee: its stack helps whoever reports it.
    if (!(err instanceof StackStartError || err instanceof ToolchainError) && err instanceof Error && err.stack) {
      process.stderr.write(`${err.stack}\n`);
    }
    return 1;
  } finally {
    for (const sig of signals) process.off(sig, onSignal);
    clearInterval(orphanWatch);
  }
}

/** A path relative to the working directory when it is below it, else absolute. */
function shortPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === "" ? "." : rel.startsWith("..") || isAbsolute(rel) ? path : rel;
}

function printTail(tail: string): void {
  if (tail.trim() === "") return;
  process.stderr.write(
    `----- last lines of the log -----\n${formatLogTail(tail)}\n---------------------------------\n`,
  );
}

function printSummary(
  info: StackInfo,
  creds: Credentials,
  agents: LocalAgents,
  pages: { webUrl: string; signInUrl: string },
  forgeLines: readonly string[],
): void {
  const credFile = shortPath(dataPaths(info.dataDir).credentialsFile);
  const logs = shortPath(info.logsDir);
  const localAgents =
    agents.agents.length === 0
      ? ["  Local agents  none (CONVEYOR_LOCAL_AGENTS=0)"]
      : agents.agents.map(
          (a, i) => `${i === 0 ? "  Local agents" : "              "}  ${a.name}   (log: ${shortPath(a.logFile)})`,
        );
  const manualArgs = agentStartArgs({
    token: creds.agentToken.secret,
    endpoint: info.agentUrl,
    name: `${hostname()}-manual-1`,
    dirs: agentDirs(info.dataDir, "manual-1"),
    config: agentConfigFile(info.dataDir),
  });
  const manual = shellCommandLines(info.agentBin, manualArgs);
  const walkthrough = firstBuildWalkthrough({
    apiUrl: info.apiUrl,
    orgSlug: creds.organization.slug,
    apiToken: creds.apiToken.secret,
    clusterId: creds.cluster.id,
  });
  const lines = [
    "",
    "conveyor is running.",
    "",
    `  Pages         ${pages.webUrl}/`,
    `  Sign in       ${pages.signInUrl}`,
    `                (one-time link for ${creds.user.email}, valid 15 minutes; a new one at every start)`,
    `  REST API      ${info.apiUrl}/v2/…   (header: Authorization: Bearer <API token>)`,
    `  Agent API     ${info.agentUrl}`,
    ...(info.agentTlsUrl && info.trustFile
      ? [`  Agent TLS     ${info.agentTlsUrl}   (streaming pings; CA and roots: ${shortPath(info.trustFile)})`]
      : []),
    `  Organization  ${creds.organization.slug}   (${creds.organization.name}, id ${creds.organization.id})`,
    `  Cluster       ${creds.cluster.name}   (id ${creds.cluster.id}; pipelines need a cluster_id)`,
    `  Admin user    ${creds.user.email}   (id ${creds.user.id})`,
    `  API token     ${creds.apiToken.secret}   (every scope)`,
    `  Agent token   ${creds.agentToken.secret}   (registration token of cluster ${creds.cluster.name})`,
    ...localAgents,
    ...forgeLines,
    "",
    "  One more agent, by hand (change --name and the paths for each further one):",
    ...manual.map((line) => `    ${line}`),
    "",
    "  Your first build (paste these lines into a shell, as they are):",
    "",
    ...walkthrough,
    "",
    "  More:",
    `    npx ci-admin user create --name "Jane Doe" --email jane@example.com`,
    `    npx ci-admin user set-password --email ${creds.user.email}   (asks for the password)`,
    `    npx ci-admin user login-link --email ${creds.user.email}   (another one-time sign-in link)`,
    "",
    `  Credentials are saved in ${credFile} and reused by the next \`npm start\`; logs are in ${logs}/.`,
    "  Press Ctrl-C to stop.",
    "",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

async function stop(dataDir: string): Promise<number> {
  const record = readStackFile(dataPaths(dataDir));
  if (!record || !isRecordedProcessAlive(record.launcher)) {
    say(`no stack is running from ${dataDir}`);
    return 0;
  }
  say(`stopping the stack of launcher pid ${record.launcher.pid}…`);
  process.kill(record.launcher.pid, "SIGTERM");
  const deadline = Date.now() + 60_000;
  while (isRecordedProcessAlive(record.launcher) && Date.now() < deadline) await sleep(200);
  if (isRecordedProcessAlive(record.launcher)) {
    fail(`launcher pid ${record.launcher.pid} is still running after 60 s`);
    return 1;
  }
  say("stopped");
  return 0;
}

/** Exits 1 with the "already running" message when a stack runs from the data directory (before a rebuild). */
function check(dataDir: string): number {
  const record = readStackFile(dataPaths(dataDir));
  if (!record || !isRecordedProcessAlive(record.launcher)) return 0;
  fail(new StackAlreadyRunningError(record).message);
  return 1;
}

function status(dataDir: string): number {
  const record = readStackFile(dataPaths(dataDir));
  if (!record || !isRecordedProcessAlive(record.launcher)) {
    say(`no stack is running from ${dataDir}`);
    return 3;
  }
  say(`a stack is ${record.state} from ${dataDir} (launcher pid ${record.launcher.pid}, since ${record.startedAt})`);
  if (record.info) {
    say(`REST API ${record.info.apiUrl}/v2, agent API ${record.info.agentUrl}`);
    for (const p of record.processes) say(`  ${p.name} pid ${p.pid}${isRecordedProcessAlive(p) ? "" : " (gone)"}`);
  }
  return 0;
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      fail(err instanceof Error ? (err.stack ?? err.message) : String(err));
      process.exit(1);
    },
  );
}
