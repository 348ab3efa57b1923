import { createClient, createRouterTransport } from "@connectrpc/connect";
import { AgentChangedSchema, AgentsService } from "@conveyor/proto/agents";
import {
  connectNats,
  consumeEvents,
  createEventPublisher,
  createLogger,
  createMongoOutboxStore,
  decodeEvent,
  jetStreamPublish,
  MAX_MARKS,
  type NatsHandle,
  newId,
  type OutboxDoc,
} from "@conveyor/runtime";
import type { JetStreamClient } from "@nats-io/jetstream";
import { type Db, MongoClient } from "mongodb";
import { createAgentsDomain } from "../agents-service.js";
import { createMongoAgentRepository } from "../store/agent-repository.js";
import { createMongoClusterRepository } from "../store/cluster-repository.js";
import { createMongoMaintainerRepository } from "../store/maintainer-repository.js";
import { createMongoQueueRepository } from "../store/queue-repository.js";
import { CONFIG, createBuilds } from "../test-support.js";

// Against the stack's real MongoDB-wire server (FerretDB) and NATS JetStream: an agent's connection-state events
// (which organization webhooks announce) are recorded in the outbox before the agent's write, so a process that dies
// between its write and its publish loses none: a relay (its own, or another replica's) publishes each, once, under
// the entry's message id (docs/notifications.md#at-least-once-from-the-write-on).
const dbName = `it_agents_events_${Date.now()}`;
const logger = createLogger("test", "silent");
let mongo: MongoClient;
let db: Db;
let nats: NatsHandle;
let clock = new Date();
let stopConsumer: () => Promise<void>;
/** Every agent state event heard, in stream order (agent_changed and the rest are left out). */
const heard: Array<{ kind: string; id: string; state: string; previous: string }> = [];

/** An agents process on the shared database whose JetStream publishes fail while `down()` says so. */
async function agentsProcess(down: () => boolean) {
  const flaky = {
    publish(...args: Parameters<JetStreamClient["publish"]>) {
      return down() ? Promise.reject(new Error("NATS is down")) : nats.js.publish(...args);
    },
  } as JetStreamClient;
  const agents = await createMongoAgentRepository(db);
  const domain = createAgentsDomain({
    clusters: await createMongoClusterRepository(db),
    queues: await createMongoQueueRepository(db),
    maintainers: await createMongoMaintainerRepository(db),
    agents,
    builds: createBuilds(() => clock),
    events: createEventPublisher(flaky, logger),
    logger,
    config: CONFIG,
    now: () => clock,
    outbox: {
      store: await createMongoOutboxStore(db.collection<OutboxDoc>("outbox")),
      publish: jetStreamPublish(flaky),
    },
  });
  const client = createClient(
    AgentsService,
    createRouterTransport(({ service }) => service(AgentsService, domain.service)),
  );
  return { domain, client, agents };
}

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  db = mongo.db(dbName);
  nats = await connectNats(process.env.NATS_URL ?? "", "it-agents-events", logger);
  stopConsumer = await consumeEvents(nats, {
    durable: `it_agents_events_${Date.now()}`,
    subject: "ci.agents.>",
    logger,
    async handle(data, subject) {
      const kind = subject.split(".").pop() ?? "";
      if (kind === "agent_changed" || kind === "job_dispatched" || kind === "credential_revoked") return;
      const e = decodeEvent(AgentChangedSchema, data);
      heard.push({ kind, id: e.agent?.id ?? "", state: e.agent?.connectionState ?? "", previous: e.previousState });
    },
  });
});
afterAll(async () => {
  await stopConsumer();
  await db.dropDatabase();
  await mongo.close();
  await nats.close();
});

const eventually = async (check: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return check();
};
const settle = () => new Promise((r) => setTimeout(r, 500));
const tick = (ms: number) => {
  clock = new Date(clock.getTime() + ms);
};
/** The outbox entries of an agent's events. */
const entriesOf = (agentId: string) =>
  db.collection("outbox").countDocuments({ _id: { $regex: `^agent-event:${agentId}:` } } as object);
/** What was heard of an agent, as "kind state<-previous" lines. */
const heardOf = (agentId: string) =>
  heard.filter((h) => h.id === agentId).map((h) => `${h.kind} ${h.state}<-${h.previous}`);

/** Registers an agent through `client` with a new organization's token. */
async function register(client: Awaited<ReturnType<typeof agentsProcess>>["client"]) {
  const organizationId = newId();
  const { token } = await client.createAgentToken({ organizationId, clusterId: "" });
  const res = await client.registerAgent({ tokenId: token?.id ?? "", hostname: "box" });
  return res.agent?.id ?? "";
}

describe("agents' state events through the outbox", () => {
  it("a process that dies after its write, before publishing, has its event published once by another replica", async () => {
    // The first process's publishes never happen (it is gone before they would); two others relay at once.
    const dead = await agentsProcess(() => true);
    const a = await agentsProcess(() => false);
    const b = await agentsProcess(() => false);
    const agentId = await register(dead.client);
    await dead.client.connectAgent({ agentId });
    expect((await a.agents.findAgent(agentId))?.connectionState).toBe("connected");
    expect(await entriesOf(agentId)).toBe(1);
    await settle();
    expect(heardOf(agentId)).toEqual([]);

    // Within the grace the writer may still be publishing: nobody takes it.
    expect(await a.domain.relayOutbox()).toBe(0);
    tick(5_000);
    const relayed = await Promise.all([a.domain.relayOutbox(), b.domain.relayOutbox()]);
    expect(relayed[0] + relayed[1]).toBe(1);
    expect(await eventually(() => heardOf(agentId).length >= 1)).toBe(true);
    expect(await a.domain.relayOutbox()).toBe(0);
    await settle();
    expect(heardOf(agentId)).toEqual(["agent_connected connected<-never_connected"]);
    expect(await entriesOf(agentId)).toBe(0);
  });

  it("a process whose publishes failed while NATS was down publishes its events once NATS is back", async () => {
    let down = true;
    const p = await agentsProcess(() => down);
    const agentId = await register(p.client);
    await p.client.connectAgent({ agentId });
    tick(1_000);
    await p.client.disconnectAgent({ agentId });
    expect(await entriesOf(agentId)).toBe(2);

    down = false;
    tick(5_000);
    expect(await p.domain.relayOutbox()).toBe(2);
    expect(await p.domain.relayOutbox()).toBe(0);
    expect(await eventually(() => heardOf(agentId).length >= 2)).toBe(true);
    await settle();
    // Entries are relayed by age: the connection first.
    expect(heardOf(agentId)).toEqual([
      "agent_connected connected<-never_connected",
      "agent_disconnected disconnected<-connected",
    ]);
    expect(await entriesOf(agentId)).toBe(0);
  });

  it("a process that publishes announces each change once, from the agent as written, and leaves no entry", async () => {
    const p = await agentsProcess(() => false);
    const agentId = await register(p.client);
    await p.client.connectAgent({ agentId });
    await p.client.stopAgent({
      organizationId: (await p.agents.findAgent(agentId))?.organizationId ?? "",
      id: agentId,
    });
    await p.client.pingAgent({ agentId });
    await p.client.disconnectAgent({ agentId });
    expect(await eventually(() => heardOf(agentId).length >= 3)).toBe(true);
    tick(5_000);
    expect(await p.domain.relayOutbox()).toBe(0);
    await settle();
    expect(heardOf(agentId)).toEqual([
      "agent_connected connected<-never_connected",
      "agent_stopping stopping<-connected",
      "agent_disconnected stopped<-stopping",
    ]);
    expect(await entriesOf(agentId)).toBe(0);
  });

  it("an agent keeps its latest marks on FerretDB: each write appends its own, the oldest beyond the bound go", async () => {
    const p = await agentsProcess(() => false);
    const agentId = await register(p.client);
    const marks = Array.from({ length: MAX_MARKS + 3 }, (_, i) => `m${i}`);
    let last = null;
    for (const mark of marks) last = await p.agents.updateAgent(agentId, { lastSeenAt: clock }, {}, mark);
    expect(last?.eventMarks).toEqual(marks.slice(-MAX_MARKS));
    expect((await p.agents.findAgent(agentId))?.eventMarks).toEqual(marks.slice(-MAX_MARKS));
  });
});
