import { AgentChangedSchema } from "@conveyor/proto/agents";
import {
  createMemoryOutboxStore,
  createOutbox,
  decodeEvent,
  MAX_MARKS,
  type RawPublish,
  SUBJECTS,
} from "@conveyor/runtime";
import { createAgentDirectory } from "../lifecycle/agent-directory.js";
import { type AgentDoc, overflowMarks } from "../store/agent-repository.js";
import { createMemoryAgentRepository } from "../store/memory-agent-repository.js";
import { agentDoc, createEventRecorder, logger, T0 } from "../test-support.js";
import { agentEventKey, agentEventResolvers, stateSubjectOf } from "./agent-events.js";

describe("agents' state events", () => {
  it.each<[string, AgentDoc["connectionState"], AgentDoc["connectionState"] | undefined, string | undefined]>([
    ["connecting", "never_connected", "connected", SUBJECTS.agents.agentConnected],
    ["coming back", "lost", "connected", SUBJECTS.agents.agentConnected],
    ["disconnecting", "connected", "disconnected", SUBJECTS.agents.agentDisconnected],
    ["stopped", "stopping", "stopped", SUBJECTS.agents.agentDisconnected],
    ["lost", "connected", "lost", SUBJECTS.agents.agentLost],
    ["stopping", "connected", "stopping", SUBJECTS.agents.agentStopping],
    ["not changing the state", "connected", undefined, undefined],
    ["setting the state it has", "connected", "connected", undefined],
    ["a state with no event", "connected", "never_connected", undefined],
  ])("an update %s (from %s)", (_name, previous, next, subject) => {
    expect(stateSubjectOf(previous, next === undefined ? {} : { connectionState: next })).toBe(subject);
  });

  it("keep an agent's latest marks: the older ones are the overflow", () => {
    const marks = Array.from({ length: MAX_MARKS + 2 }, (_, i) => `m${i}`);
    expect(overflowMarks(marks)).toEqual(["m0", "m1"]);
    expect(overflowMarks(marks.slice(0, MAX_MARKS))).toEqual([]);
  });
});

/** A directory over memory whose JetStream stand-in de-duplicates by msgID and fails while `down`. */
function world() {
  let clock = new Date(T0);
  const now = () => clock;
  const repo = createMemoryAgentRepository();
  const store = createMemoryOutboxStore();
  const stream = { down: false, messages: [] as Array<{ subject: string; msgID: string; state: string }> };
  const seen = new Set<string>();
  const publish: RawPublish = async (subject, data, msgID) => {
    if (stream.down) throw new Error("no responders");
    if (seen.has(msgID)) return;
    seen.add(msgID);
    stream.messages.push({ subject, msgID, state: decodeEvent(AgentChangedSchema, data).agent?.connectionState ?? "" });
  };
  const outbox = createOutbox({ store, publish, logger, now, resolvers: agentEventResolvers(repo, now) });
  const directory = () => createAgentDirectory({ repo, events: createEventRecorder(), outbox, logger, ttlMs: 60_000 });
  const advance = (ms: number) => {
    clock = new Date(clock.getTime() + ms);
  };
  return { repo, store, stream, outbox, directory, advance };
}

const agent = (id: string) => agentDoc(id);

describe("the agent directory's state changes", () => {
  it("are recorded with a mark on the agent, published under the entry's msgID, and leave nothing behind", async () => {
    const w = world();
    const a = agent("a1");
    await w.repo.insertAgent(a);
    const updated = await w.directory().update(a, { connectionState: "connected" });
    expect(updated?.eventMarks).toHaveLength(1);
    expect(w.stream.messages).toEqual([
      {
        subject: SUBJECTS.agents.agentConnected,
        msgID: expect.stringMatching(`^${agentEventKey("a1", updated?.eventMarks?.[0] ?? "")}:`),
        state: "connected",
      },
    ]);
    await new Promise((r) => setImmediate(r));
    expect(w.store.docs.size).toBe(0);
  });

  it("whose publish failed (NATS down, or the process gone) are published once by the relay", async () => {
    const w = world();
    const a = agent("a1");
    await w.repo.insertAgent(a);
    w.stream.down = true;
    await w.directory().update(a, { connectionState: "connected" });
    expect(w.stream.messages).toEqual([]);
    expect(w.store.docs.size).toBe(1);
    w.stream.down = false;
    w.advance(5_000);
    expect(await w.outbox.relay()).toBe(1);
    expect(await w.outbox.relay()).toBe(0);
    expect(w.stream.messages.map((m) => [m.subject, m.state])).toEqual([[SUBJECTS.agents.agentConnected, "connected"]]);
    expect(w.store.docs.size).toBe(0);
  });

  it("from a stale copy keep the mark another process wrote, so its event is still published", async () => {
    const w = world();
    const a = agent("a1");
    await w.repo.insertAgent(a);
    const stale = { ...a, connectionState: "connected" as const };
    await w.repo.updateAgent("a1", { connectionState: "connected" });
    // One process marks the agent lost and dies before publishing; another, from its cached copy, stops it.
    w.stream.down = true;
    const lost = await w.directory().update(stale, { connectionState: "lost" });
    w.stream.down = false;
    await w.directory().update(stale, { connectionState: "stopping" });
    expect((await w.repo.findAgent("a1"))?.eventMarks).toEqual([lost?.eventMarks?.[0], expect.any(String)]);
    w.advance(5_000);
    expect(await w.outbox.relay()).toBe(1);
    expect(w.stream.messages.map((m) => m.state).sort()).toEqual(["lost", "stopping"]);
  });

  it("that are not state changes record nothing and leave the marks alone", async () => {
    const w = world();
    const a = agent("a1");
    await w.repo.insertAgent(a);
    const updated = await w.directory().update(a, { paused: true });
    expect(updated?.eventMarks).toBeUndefined();
    expect(w.stream.messages).toEqual([]);
    expect(w.store.docs.size).toBe(0);
  });
});
