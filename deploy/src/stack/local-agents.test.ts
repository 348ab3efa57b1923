import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  agentConfigFile,
  agentDirs,
  agentEnv,
  agentStartArgs,
  exitDecision,
  LocalAgentsConfigError,
  localAgentCount,
  localAgentName,
  pingModeFor,
  restartDelayMs,
  shellCommand,
  shellCommandLines,
  startLocalAgents,
} from "./local-agents.js";
import { waitUntil } from "./wait.js";

describe("localAgentCount", () => {
  it("is 1 unless CONVEYOR_LOCAL_AGENTS says otherwise", () => {
    expect(localAgentCount({})).toBe(1);
    expect(localAgentCount({ CONVEYOR_LOCAL_AGENTS: " " })).toBe(1);
    expect(localAgentCount({ CONVEYOR_LOCAL_AGENTS: "0" })).toBe(0);
    expect(localAgentCount({ CONVEYOR_LOCAL_AGENTS: " 3 " })).toBe(3);
    expect(localAgentCount({ CONVEYOR_LOCAL_AGENTS: "32" })).toBe(32);
  });

  it.each(["33", "-1", "1.5", "two", "1e1", "0x2"])("refuses %s with a message naming the variable", (value) => {
    expect(() => localAgentCount({ CONVEYOR_LOCAL_AGENTS: value })).toThrow(LocalAgentsConfigError);
    expect(() => localAgentCount({ CONVEYOR_LOCAL_AGENTS: value })).toThrow(
      `CONVEYOR_LOCAL_AGENTS must be a whole number from 0 to 32 (how many local agents npm start runs; 0 for none), not "${value}".`,
    );
  });
});

describe("agentStartArgs", () => {
  const dirs = agentDirs("/data", "2");

  it("gives each agent its own folders under <data>/agents/<n>", () => {
    expect(dirs).toEqual({
      root: "/data/agents/2",
      builds: "/data/agents/2/builds",
      hooks: "/data/agents/2/hooks",
      plugins: "/data/agents/2/plugins",
      sockets: "/data/agents/2/sockets",
    });
    expect(agentConfigFile("/data")).toBe("/data/agents/buildkite-agent.cfg");
    expect(localAgentName("box", 2)).toBe("box-local-2");
  });

  it("starts an agent on the stack's agent API, polling, in queue default, with nothing of the machine's", () => {
    const args = agentStartArgs({
      endpoint: "http://127.0.0.1:8080/v3",
      name: "box-local-2",
      dirs,
      config: "/data/agents/buildkite-agent.cfg",
    });
    expect(args).toEqual([
      "start",
      "--endpoint",
      "http://127.0.0.1:8080/v3",
      "--name",
      "box-local-2",
      "--tags",
      "queue=default",
      "--ping-mode",
      "poll-only",
      "--build-path",
      "/data/agents/2/builds",
      "--hooks-path",
      "/data/agents/2/hooks",
      "--plugins-path",
      "/data/agents/2/plugins",
      "--sockets-path",
      "/data/agents/2/sockets",
      "--config",
      "/data/agents/buildkite-agent.cfg",
      "--no-color",
    ]);
    // Features users' pipelines rely on stay on.
    for (const flag of ["--skip-checkout", "--no-plugins", "--no-git-submodules", "--no-ssh-keyscan"]) {
      expect(args).not.toContain(flag);
    }
  });

  it("puts the token on the command line only when asked (the command shown for starting one by hand)", () => {
    const args = agentStartArgs({ endpoint: "http://h/v3", name: "n", dirs, config: "/c", token: "bkat_x" });
    expect(args.slice(0, 3)).toEqual(["start", "--token", "bkat_x"]);
  });
});

describe("agentEnv", () => {
  it("drops every BUILDKITE_ variable of the launcher and passes the token", () => {
    const env = agentEnv(
      {
        PATH: "/bin",
        HOME: "/home/me",
        BUILDKITE_AGENT_TAGS: "queue=prod",
        BUILDKITE_BUILD_PATH: "/x",
        UNSET: undefined,
      },
      "bkat_secret",
    );
    expect(env).toEqual({ PATH: "/bin", HOME: "/home/me", BUILDKITE_AGENT_TOKEN: "bkat_secret" });
  });

  it("trusts the stack's local CA through SSL_CERT_FILE when given one", () => {
    expect(agentEnv({ SSL_CERT_FILE: "/mine.pem" }, "t", "/data/tls/trust.pem").SSL_CERT_FILE).toBe(
      "/data/tls/trust.pem",
    );
  });
});

describe("pingModeFor", () => {
  it("streams pings over https (HTTP/2) and polls over plain http", () => {
    expect(pingModeFor("https://localhost:8443/v3")).toBe("auto");
    expect(pingModeFor("http://127.0.0.1:8080/v3")).toBe("poll-only");
  });
});

describe("restarts", () => {
  it("wait 1 s after the first exit, doubling up to 30 s", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 100].map(restartDelayMs)).toEqual([
      1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000,
    ]);
  });

  it("happen after a failure or a signal, not after a clean disconnect", () => {
    expect(exitDecision({ code: 1, signal: null })).toBe("restart");
    expect(exitDecision({ code: null, signal: "SIGKILL" })).toBe("restart");
    expect(exitDecision({ code: null, signal: null, error: new Error("ENOENT") })).toBe("restart");
    expect(exitDecision({ code: 0, signal: null })).toBe("leave");
  });
});

describe("shellCommand", () => {
  it("quotes what a shell would split or expand", () => {
    expect(shellCommand("/opt/bk agent/buildkite-agent", ["start", "--name", "it's", "--tags", "queue=default"])).toBe(
      "'/opt/bk agent/buildkite-agent' start --name 'it'\\''s' --tags queue=default",
    );
  });

  it("puts one option a line, with continuations a shell accepts", () => {
    const lines = shellCommandLines("/bin/echo", ["start", "--token", "a b", "--no-color", "--name", "x"]);
    expect(lines).toEqual(["/bin/echo start \\", "  --token 'a b' \\", "  --no-color \\", "  --name x"]);
    expect(execFileSync("sh", ["-c", lines.join("\n")], { encoding: "utf8" })).toBe(
      "start --token a b --no-color --name x\n",
    );
  });
});

describe("startLocalAgents", () => {
  const dir = mkdtempSync(join(tmpdir(), "conveyor-agents-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A stand-in for buildkite-agent: records its arguments and token, then runs the given shell script. */
  function fakeAgent(name: string, script: string): string {
    const bin = join(dir, name);
    writeFileSync(
      bin,
      `#!/bin/sh\necho "args: $*"\necho "token: $BUILDKITE_AGENT_TOKEN"\necho "tags env: $BUILDKITE_AGENT_TAGS"\n${script}\n`,
    );
    chmodSync(bin, 0o755);
    return bin;
  }

  function start(bin: string, lines: string[], count = 1) {
    return startLocalAgents({
      count,
      bin,
      endpoint: "http://127.0.0.1:1/v3",
      token: "bkat_t",
      dataDir: join(dir, "data"),
      logsDir: join(dir, "logs"),
      env: { ...process.env, BUILDKITE_AGENT_TAGS: "queue=elsewhere" },
      detached: false,
      log: (line) => lines.push(line),
      hostname: "box",
    });
  }

  it("starts agents that log to logs/agent-<n>.log and stops them with SIGTERM, without restarting them", async () => {
    const bin = fakeAgent("idle-agent", "trap 'echo got TERM; exit 0' TERM\nwhile true; do sleep 0.1; done");
    const lines: string[] = [];
    const agents = start(bin, lines, 2);
    expect(agents.agents.map((a) => a.name)).toEqual(["box-local-1", "box-local-2"]);
    const log = join(dir, "logs", "agent-2.log");
    await waitUntil(async () => readFileSync(log, "utf8").includes("tags env:"), { what: "agent", timeoutMs: 5000 });
    const text = readFileSync(log, "utf8");
    expect(text).toContain("--name box-local-2 --tags queue=default");
    expect(text).toContain(`--build-path ${join(dir, "data", "agents", "2", "builds")}`);
    expect(text).toContain("token: bkat_t");
    expect(text).toContain("tags env: \n");
    expect(text).not.toContain("bkat_t --");
    await agents.stop();
    expect(readFileSync(log, "utf8")).toContain("got TERM");
    expect(readFileSync(agentConfigFile(join(dir, "data")), "utf8")).toMatch(/^#/);
    expect(lines).toEqual([]);
  });

  it("restarts an agent that fails, saying so once, and stops restarting on stop()", async () => {
    const bin = fakeAgent("failing-agent", "echo 'fatal: POST /v3/register: 404 Not Found'\nexit 1");
    const lines: string[] = [];
    const agents = start(bin, lines);
    const log = join(dir, "logs", "agent-1.log");
    const runs = () => (readFileSync(log, "utf8").match(/fatal: POST/g) ?? []).length;
    const before = runs();
    await waitUntil(async () => runs() >= before + 2, { what: "restart", timeoutMs: 5000 });
    await agents.stop();
    const after = runs();
    expect(lines).toEqual([
      `local agent box-local-1 exited with code 1: fatal: POST /v3/register: 404 Not Found; restarting it in 1 s (log: ${log})`,
    ]);
    await new Promise((r) => setTimeout(r, 2500));
    expect(runs()).toBe(after);
  });
});
