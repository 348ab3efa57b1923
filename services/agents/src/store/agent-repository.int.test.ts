import { type Db, MongoClient } from "mongodb";
import { agentDoc, T0 } from "../test-support.js";
import { type AgentRepository, createMongoAgentRepository } from "./agent-repository.js";
import { createMemoryAgentRepository } from "./memory-agent-repository.js";

// The agent repository's sightings on the real MongoDB-wire server and in memory: both must answer alike.
const dbName = `it_agent_repo_${Date.now()}`;
let mongo: MongoClient;
let db: Db;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  db = mongo.db(dbName);
});
afterAll(async () => {
  await db.dropDatabase();
  await mongo.close();
});

const at = (seconds: number) => new Date(T0 + seconds * 1000);
/** A connected agent last seen at `lastSeenAt`. */
const anAgent = (id: string, lastSeenAt: Date) => agentDoc(id, { connectionState: "connected", lastSeenAt });

const implementations: Array<[string, () => Promise<AgentRepository>]> = [
  ["on MongoDB", () => createMongoAgentRepository(db)],
  ["in memory", async () => createMemoryAgentRepository()],
];

describe.each(implementations)("agent sightings %s", (label, open) => {
  it("raises each agent's last sighting to the time given, never lowers it, whether agents share a time or not", async () => {
    const repo = await open();
    const prefix = label.replace(/\W/g, "");
    // 450 agents seen at one time (more than one statement's worth), two at times of their own.
    const many = Array.from({ length: 450 }, (_, i) => `${prefix}-m${i}`);
    for (const id of many) await repo.insertAgent(anAgent(id, at(0)));
    await repo.insertAgent(anAgent(`${prefix}-late`, at(100)));
    await repo.insertAgent(anAgent(`${prefix}-other`, at(0)));
    await repo.touchAgents(
      new Map([...many.map((id) => [id, at(30)] as const), [`${prefix}-late`, at(30)], [`${prefix}-other`, at(45)]]),
    );
    const seen = async (id: string) => (await repo.findAgent(id))?.lastSeenAt.getTime();
    expect(await seen(many[0] ?? "")).toBe(at(30).getTime());
    expect(await seen(many[449] ?? "")).toBe(at(30).getTime());
    expect(await seen(many[222] ?? "")).toBe(at(30).getTime());
    // A later sighting stays.
    expect(await seen(`${prefix}-late`)).toBe(at(100).getTime());
    expect(await seen(`${prefix}-other`)).toBe(at(45).getTime());
    await repo.touchAgents(new Map());
  });
});
