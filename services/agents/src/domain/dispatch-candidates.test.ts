import { parseTags } from "./agent-tags.js";
import { type AskingAgent, byDispatchOrder, candidatesFor, type WaitingJob } from "./dispatch-candidates.js";

const job = (id: string, extra: Partial<WaitingJob> = {}): WaitingJob => ({
  id,
  organizationId: "org",
  clusterId: "c1",
  agentQueryRules: [],
  priority: 0,
  runnableAt: 1000,
  ...extra,
});
const agent = (tags: string[], extra: Partial<AskingAgent> = {}): AskingAgent => ({
  organizationId: "org",
  clusterId: "c1",
  tags: parseTags(tags),
  ...extra,
});

describe("candidatesFor", () => {
  it("orders by priority, then by how long the job has been runnable", () => {
    const jobs = [
      job("late", { runnableAt: 3000 }),
      job("urgent", { priority: 5, runnableAt: 9000 }),
      job("early", { runnableAt: 1000 }),
      job("lowly", { priority: -1, runnableAt: 0 }),
    ];
    expect(candidatesFor(agent([]), jobs, 10).map((j) => j.id)).toEqual(["urgent", "early", "late", "lowly"]);
    expect(candidatesFor(agent([]), jobs, 2).map((j) => j.id)).toEqual(["urgent", "early"]);
  });

  it("offers only jobs of the agent's organization and cluster", () => {
    const jobs = [
      job("mine"),
      job("other-cluster", { clusterId: "c2" }),
      job("unclustered", { clusterId: null }),
      job("other-org", { organizationId: "x" }),
    ];
    expect(candidatesFor(agent([]), jobs, 10).map((j) => j.id)).toEqual(["mine"]);
    expect(candidatesFor(agent([], { clusterId: null }), jobs, 10).map((j) => j.id)).toEqual(["unclustered"]);
  });

  it("offers only jobs whose rules the agent's tags satisfy", () => {
    const jobs = [
      job("default"),
      job("deploy", { agentQueryRules: ["queue=deploy"] }),
      job("linux", { agentQueryRules: ["os=linux"] }),
      job("gpu", { agentQueryRules: ["gpu=true"] }),
    ];
    expect(candidatesFor(agent(["os=linux"]), jobs, 10).map((j) => j.id)).toEqual(["default", "linux"]);
    expect(candidatesFor(agent(["queue=deploy"]), jobs, 10).map((j) => j.id)).toEqual(["deploy"]);
  });

  it("offers nothing to an agent whose cluster queue's dispatch is paused, and the same jobs once it is not", () => {
    const jobs = [
      job("deploy", { agentQueryRules: ["queue=deploy"] }),
      job("deploy-2", { agentQueryRules: ["queue=de*"] }),
    ];
    expect(candidatesFor(agent(["queue=deploy"], { dispatchPaused: true }), jobs, 10)).toEqual([]);
    expect(candidatesFor(agent(["queue=deploy"], { dispatchPaused: false }), jobs, 10).map((j) => j.id)).toEqual([
      "deploy",
      "deploy-2",
    ]);
  });

  it("keeps the best few exactly as sorting every match would, whatever the order the jobs come in", () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let round = 0; round < 200; round++) {
      const jobs = Array.from({ length: random(40) }, (_, i) =>
        job(`j${i}`, {
          priority: random(3) - 1,
          runnableAt: random(5) * 1000,
          agentQueryRules: random(4) === 0 ? ["queue=other"] : [],
          ...(random(10) === 0 ? { clusterId: "c2" } : {}),
        }),
      );
      const limit = random(8);
      const expected = jobs
        .filter((j) => j.clusterId === "c1" && j.agentQueryRules.length === 0)
        .sort(byDispatchOrder)
        .slice(0, limit);
      expect(candidatesFor(agent([]), jobs, limit).map((j) => j.id)).toEqual(expected.map((j) => j.id));
    }
  });
});
