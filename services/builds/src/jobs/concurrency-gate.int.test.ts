import { randomUUID } from "node:crypto";
import { JobEventType } from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";
import type { BuildsParts } from "../builds-context.js";
import { type BuildsClient as Client, openBuildsService, testDatabases } from "../test-builds-service.js";
import { pipelineFromYaml } from "../test-pipelines.js";

// Concurrency groups over the real MongoDB-wire server, with two builds services on one database as two processes
// of the service would be: the limit holds whichever process admits, in creation order unless eager.
const databases = testDatabases("it_concurrency");

beforeAll(() => databases.connect());
afterAll(() => databases.close());

/** Two services over a new database. */
async function twoProcesses() {
  const db = databases.create();
  return [await openBuildsService(db), await openBuildsService(db)] as const;
}

const pipelineOf = (yaml: string, organizationId: string) => pipelineFromYaml(yaml, { organizationId });

async function newBuild(client: Client, p: Pipeline) {
  const { build } = await client.createBuild({ pipeline: p, commit: "abc", branch: "main", organizationSlug: "acme" });
  if (!build) throw new Error("no build");
  return build;
}

/** The state of each build's job named `name`, in build order. */
async function statesOf(client: Client, builds: Array<{ pipelineId: string; number: number }>, name: string) {
  const states: string[] = [];
  for (const b of builds) {
    const { build } = await client.getBuild({ pipelineId: b.pipelineId, number: b.number });
    states.push(build?.jobs.find((j) => j.name === name)?.state ?? "none");
  }
  return states;
}

/** Runs a job to its end through an agent: assign, accept, start, finish with `exit`. */
async function runToEnd(client: Client, jobId: string, exit = 0) {
  const agent = { id: `agent-${jobId}`, name: "a", hostname: "h", metaData: [] };
  await client.assignJob({ jobId, agent });
  await client.acceptJob({ jobId, agentId: agent.id });
  await client.transitionJob({ jobId, event: JobEventType.START, agentId: agent.id });
  await client.transitionJob({ jobId, event: JobEventType.FINISH, exitStatus: exit, agentId: agent.id });
}

/** Lets both processes' gates finish what the last changes asked of them. */
async function settle(allParts: readonly BuildsParts[]) {
  for (let i = 0; i < 2; i++) await Promise.all(allParts.map((p) => p.duties.sweepJobs()));
}

describe("concurrency groups", () => {
  it("never runs more jobs of a group than its limit, admitting through both processes in creation order", async () => {
    const [one, two] = await twoProcesses();
    const org = randomUUID();
    const p = pipelineOf("steps:\n  - {label: deploy, command: run, concurrency: 2, concurrency_group: prod}", org);
    const builds = [];
    for (let i = 0; i < 6; i++) builds.push(await newBuild(i % 2 === 0 ? one.client : two.client, p));
    await settle([one.parts, two.parts]);
    expect(await statesOf(one.client, builds, "deploy")).toEqual([
      "scheduled",
      "scheduled",
      "limited",
      "limited",
      "limited",
      "limited",
    ]);

    // Jobs finish through either process; the next ones in line take the freed slots, never more than two at once.
    for (let i = 0; i < 6; i++) {
      const id = builds[i]?.jobs[0]?.id ?? "";
      await runToEnd(i % 2 === 0 ? two.client : one.client, id, i === 1 ? 1 : 0);
      await settle([one.parts, two.parts]);
      const states = await statesOf(one.client, builds, "deploy");
      const holding = states.filter((s) => s === "scheduled").length;
      expect(holding).toBeLessThanOrEqual(2);
      expect(states.slice(0, i + 1).every((s) => s === "passed" || s === "failed")).toBe(true);
      expect(holding).toBe(Math.min(2, 5 - i));
      // In creation order: every job still limited was created after every job admitted.
      const firstLimited = states.indexOf("limited");
      if (firstLimited >= 0) expect(states.lastIndexOf("scheduled")).toBeLessThan(firstLimited);
    }
  });

  it("keeps an ordered job behind an earlier job of the group still waiting for its dependencies; eager passes it", async () => {
    const [one, two] = await twoProcesses();
    const org = randomUUID();
    const behindTests = pipelineOf(
      "steps:\n  - {label: tests, command: run}\n  - wait\n  - {label: deploy, command: run, concurrency: 1, concurrency_group: prod}",
      org,
    );
    const ordered = pipelineOf(
      "steps:\n  - {label: deploy, command: run, concurrency: 1, concurrency_group: prod}",
      org,
    );
    const eager = pipelineOf(
      "steps:\n  - {label: deploy, command: run, concurrency: 1, concurrency_group: prod, concurrency_method: eager}",
      org,
    );
    const first = await newBuild(one.client, behindTests);
    const second = await newBuild(two.client, ordered);
    await settle([one.parts, two.parts]);
    expect(await statesOf(one.client, [first, second], "deploy")).toEqual(["waiting", "limited"]);

    const third = await newBuild(one.client, eager);
    await settle([one.parts, two.parts]);
    expect(await statesOf(one.client, [first, second, third], "deploy")).toEqual(["waiting", "limited", "scheduled"]);

    // The eager job ends; the earlier build's tests pass: its deploy goes first, then the ordered one.
    await runToEnd(two.client, third.jobs[0]?.id ?? "");
    await runToEnd(one.client, first.jobs.find((j) => j.name === "tests")?.id ?? "");
    await settle([one.parts, two.parts]);
    expect(await statesOf(one.client, [first, second], "deploy")).toEqual(["scheduled", "limited"]);
    await runToEnd(one.client, first.jobs.find((j) => j.name === "deploy")?.id ?? "");
    await settle([one.parts, two.parts]);
    expect(await statesOf(one.client, [first, second], "deploy")).toEqual(["passed", "scheduled"]);
  });

  it("lets a canceled build's waiting job out of the line, and frees the slot of a job whose build is canceled", async () => {
    const [one, two] = await twoProcesses();
    const org = randomUUID();
    const p = pipelineOf("steps:\n  - {label: deploy, command: run, concurrency: 1, concurrency_group: prod}", org);
    const [a, b, c] = [await newBuild(one.client, p), await newBuild(one.client, p), await newBuild(two.client, p)];
    await settle([one.parts, two.parts]);
    expect(await statesOf(one.client, [a, b, c], "deploy")).toEqual(["scheduled", "limited", "limited"]);
    await one.client.cancelBuild({ pipelineId: p.id, number: b.number });
    await one.client.cancelBuild({ pipelineId: p.id, number: a.number });
    await settle([one.parts, two.parts]);
    expect(await statesOf(one.client, [a, b, c], "deploy")).toEqual(["canceled", "canceled", "scheduled"]);
  });
});
