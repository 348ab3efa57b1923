import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import { eventually, localRepository, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// Builds test/go-client/agents-check (the official go-buildkite client, v4) into the tool cache and runs it against
// a build whose job ran on the real agent: the build, the job's log, the organization's agents, one agent, stopping
// it and deleting the log must all decode and work.
const cacheDir = process.env.CONVEYOR_CACHE_DIR ?? join(homedir(), ".cache", "conveyor");
const binary = join(cacheDir, "bin", "go-client-check", "agents-check");
// go-buildkite writes times back out as Go does: fractions of a second without trailing zeros.
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

beforeAll(() => {
  mkdirSync(join(cacheDir, "bin", "go-client-check"), { recursive: true });
  execFileSync("go", ["build", "-o", binary, "./agents-check"], {
    cwd: join(process.cwd(), "test/go-client"),
    stdio: "inherit",
  });
}, 300_000);
afterAll(stopAllAgents);

describe("go-buildkite decodes jobs that ran on an agent, their logs and the agents", () => {
  it("gets the build, the job's log and the agents, stops the agent and deletes the log", async () => {
    const org = await arrangeOrgUser({
      scopes: [
        "read_builds",
        "write_builds",
        "write_pipelines",
        "read_build_logs",
        "write_build_logs",
        "read_agents",
        "write_agents",
      ],
      role: Role.ADMIN,
    });
    const clusterId = await arrangeCluster(org.organization.id);
    const { secret } = await agents.createAgentToken({ organizationId: org.organization.id, clusterId });
    const agent = startAgent({ token: secret });
    const base = `/v2/organizations/${org.organization.slug}`;
    const pipeline = await send("POST", `${base}/pipelines`, org.secret, {
      name: unique("Go Agents"),
      repository: localRepository(),
      cluster_id: clusterId,
      configuration: "steps:\n  - label: greet\n    command: echo go-client-marker\n",
    });
    const created = await send("POST", `${base}/pipelines/${pipeline.body.slug}/builds`, org.secret, {
      commit: "HEAD",
      branch: "main",
    });
    await eventually("the build to pass", async () => {
      const b = await send("GET", `${base}/pipelines/${pipeline.body.slug}/builds/${created.body.number}`, org.secret);
      return b.body.state === "passed" ? b.body : undefined;
    });

    const out = JSON.parse(
      execFileSync(binary, [], {
        env: {
          ...process.env,
          CONVEYOR_API_URL: stack.apiUrl,
          CONVEYOR_API_TOKEN: org.secret,
          CONVEYOR_ORG_SLUG: org.organization.slug,
          CHECK_PIPELINE: pipeline.body.slug,
          CHECK_BUILD: String(created.body.number),
          CHECK_AGENT_NAME: agent.name,
        },
        encoding: "utf8",
      }),
    );
    const job = out.build.jobs[0];
    expect(out.build.state).toBe("passed");
    expect(job).toMatchObject({ state: "passed", exit_status: 0 });
    expect(job.agent).toMatchObject({ name: agent.name, connection_state: "connected" });
    for (const stamp of [job.started_at, job.finished_at, job.runnable_at]) expect(stamp).toMatch(ISO);
    expect(out.log.content).toContain("go-client-marker");
    expect(out.log.size).toBe(Buffer.byteLength(out.log.content));
    expect(out.agents).toHaveLength(1);
    expect(out.agent).toMatchObject({ id: out.agents[0].id, name: agent.name, connection_state: "connected" });
    expect(out.agent.meta_data).toEqual(["queue=default"]);
    expect(out.missing_agent_error).toBe("No agent found");
    expect(out.stop_status).toBe(204);
    expect(out.delete_status).toBe(204);
    expect(out.log_after_delete).toMatchObject({ content: "", size: 0 });
    expect(await agent.exited).toBe(0);
  });
});
