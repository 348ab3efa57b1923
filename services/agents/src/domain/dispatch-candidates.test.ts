import { parseTags } from "./agent-tags.js";
import { type AskingAgent, candidatesFor, type WaitingJob } from "./dispatch-candidates.js";

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
});
