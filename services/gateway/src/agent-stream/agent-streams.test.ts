import { create } from "@bufbuild/protobuf";
import { AgentSchema } from "@conveyor/proto/agents";
import { createLogger, type agentStreamWire as wire } from "@conveyor/runtime";
import { type AgentStreamSettings, createAgentStreams } from "./agent-streams.js";

/**
 * Many streaming agents of one queue on one gateway (the `streams` row of `npm run bench` holds 2,000): an agents
 * service that offers each asked agent the next waiting job, and counts what it was asked.
 */
function fleet(count: number, settings: Partial<AgentStreamSettings>) {
  const waiting: string[] = [];
  const calls = { getAgent: 0, pingAgent: 0 };
  const streams = createAgentStreams({
    agents: {
      async getAgent({ id }: { id?: string }) {
        calls.getAgent++;
        return {
          agent: create(AgentSchema, {
            id,
            organizationId: "org",
            connectionState: "connected",
            metaData: ["queue=q"],
          }),
        } as never;
      },
      async pingAgent() {
        calls.pingAgent++;
        // An answer takes a turn of the event loop, as an RPC does.
        await new Promise((resolve) => setImmediate(resolve));
        return { action: "idle", message: "", jobId: waiting.shift() ?? "" } as never;
      },
    },
    builds: { getJob: async () => ({}) as never },
    logger: createLogger("test", "silent"),
    settings,
  });
  const told = new Map<string, wire.StreamAction[]>();
  for (let i = 0; i < count; i++) {
    const agentId = `agent-${i}`;
    told.set(agentId, []);
    streams.open(
      { agentId, organizationId: "org", clusterId: "cluster" },
      { send: (action) => told.get(agentId)?.push(action), end: () => {} },
    );
  }
  const assigned = () =>
    [...told.entries()].filter(([, actions]) => actions.some((a) => a.kind === "job_assigned")).map(([id]) => id);
  return { streams, waiting, calls, told, assigned };
}

const job = (id: string) => ({ id, organizationId: "org", clusterId: "cluster", agentQueryRules: ["queue=q"] });

describe("agent streams, many agents", () => {
  afterEach(() => jest.useRealTimers());

  it("offers the jobs of a parallel step to as many idle agents at once, not to the same few one after another", async () => {
    // No retries: every job must find its agent in the first round.
    const f = fleet(40, { retryDelaysMs: [], candidatesPerJob: 5 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(f.assigned()).toEqual([]);
    const jobs = Array.from({ length: 20 }, (_, i) => `job-${i}`);
    f.waiting.push(...jobs);
    await Promise.all(jobs.map((id) => f.streams.jobRunnable(job(id))));
    expect(f.assigned()).toHaveLength(20);
    expect(f.waiting).toEqual([]);
    f.streams.closeAll();
  });

  it("asks the idle agents after spread over the recheck interval, not all in the same instant", async () => {
    jest.useFakeTimers({ now: 0 });
    let n = 0;
    const f = fleet(100, { idleRecheckMs: 10_000, random: () => (n++ % 100) / 100 });
    await jest.advanceTimersByTimeAsync(0);
    // An opening stream reads its agent and asks it.
    expect(f.calls).toEqual({ getAgent: 100, pingAgent: 100 });
    const perSecond: number[] = [];
    for (let s = 0; s < 13; s++) {
      const before = f.calls.pingAgent;
      await jest.advanceTimersByTimeAsync(1_000);
      perSecond.push(f.calls.pingAgent - before);
    }
    // Each idle agent is asked once between 7.5 and 12.5 s after its stream opened, about 20 a second; an ask is one
    // call (the agent is not read first).
    expect(perSecond.reduce((a, b) => a + b, 0)).toBe(100);
    expect(f.calls.getAgent).toBe(100);
    expect(Math.max(...perSecond)).toBeLessThanOrEqual(25);
    expect(perSecond.slice(0, 7)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    f.streams.closeAll();
  });

  it("asks every agent after within seconds, spread, when events may have been missed; otherwise about a minute on", async () => {
    jest.useFakeTimers({ now: 0 });
    let n = 0;
    const f = fleet(100, { random: () => (n++ % 100) / 100 });
    await jest.advanceTimersByTimeAsync(0);
    await jest.advanceTimersByTimeAsync(30_000);
    // The default: no idle agent is asked after again within 30 s of its stream opening.
    expect(f.calls.pingAgent).toBe(100);
    f.streams.recheckAll();
    const perSecond: number[] = [];
    for (let s = 0; s < 6; s++) {
      const before = f.calls.pingAgent;
      await jest.advanceTimersByTimeAsync(1_000);
      perSecond.push(f.calls.pingAgent - before);
    }
    expect(perSecond.reduce((a, b) => a + b, 0)).toBe(100);
    expect(Math.max(...perSecond)).toBeLessThanOrEqual(25);
    f.streams.closeAll();
  });
});
