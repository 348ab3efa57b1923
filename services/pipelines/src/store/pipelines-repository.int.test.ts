import { randomUUID } from "node:crypto";
import { type Document, MongoClient } from "mongodb";
import { webhookTokenHash } from "../domain/webhook-token.js";
import {
  createMongoPipelinesRepository,
  DuplicatePipelineError,
  type PipelineDoc,
  type PipelinesRepository,
} from "./pipelines-repository.js";

// Against the stack's real MongoDB-wire server, in a throwaway database.
const dbName = `it_pipelines_${Date.now()}`;
let client: MongoClient;
let repo: PipelinesRepository;

beforeAll(async () => {
  client = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  repo = await createMongoPipelinesRepository(client.db(dbName));
});
afterAll(async () => {
  await client.db(dbName).dropDatabase();
  await client.close();
});

function doc(organizationId: string, name: string, slug: string): PipelineDoc {
  const at = new Date();
  return {
    _id: randomUUID(),
    organizationId,
    slug,
    name,
    nameKey: name.toLowerCase(),
    description: null,
    repository: "r",
    clusterId: null,
    pipelineTemplateUuid: null,
    branchConfiguration: null,
    defaultBranch: "main",
    provider: { id: "git", settings: { build_branches: true }, webhookToken: "w" },
    skipQueuedBranchBuilds: false,
    skipQueuedBranchBuildsFilter: null,
    cancelRunningBranchBuilds: false,
    cancelRunningBranchBuildsFilter: null,
    allowRebuilds: true,
    createdBy: { id: "u", name: "U", email: "u@example.com", avatarUrl: null, createdAt: null },
    createdAt: at,
    updatedAt: at,
    archivedAt: null,
    env: {},
    visibility: "private",
    tags: null,
    configuration: "steps: []",
    definitionJson: '{"steps":[],"env":{"a.b":"dots are fine in JSON text"}}',
    counts: { scheduledBuilds: 0, runningBuilds: 0, scheduledJobs: 0, runningJobs: 0, waitingJobs: 0 },
    teams: {},
    badgeToken: "b",
  };
}

describe("MongoDB pipelines repository", () => {
  it("keeps names (any case) and slugs unique per organization, not across organizations", async () => {
    const org = randomUUID();
    await repo.insert(doc(org, "Web", "web"));
    await expect(repo.insert(doc(org, "WEB", "web-2"))).rejects.toMatchObject({ field: "name" });
    await expect(repo.insert(doc(org, "Other", "web"))).rejects.toBeInstanceOf(DuplicatePipelineError);
    await repo.insert(doc(randomUUID(), "Web", "web"));
    expect(await repo.taken(org, "web", "nope")).toEqual({ name: true, slug: false });
  });

  it("finds a pipeline by id or slug with point lookups, not by reading the organization's pipelines", async () => {
    const org = randomUUID();
    const named = Array.from({ length: 30 }, (_, i) => doc(org, `P${i}`, `p-${i}`));
    for (const d of named) await repo.insert(d);
    // A slug that looks like an id: found by slug when no pipeline has that id.
    const uuidLike = doc(org, "UUID-like", randomUUID());
    await repo.insert(uuidLike);
    const commands: Array<Record<string, unknown>> = [];
    const watched = await new MongoClient(process.env.MONGODB_URL ?? "", { monitorCommands: true }).connect();
    try {
      const watchedRepo = await createMongoPipelinesRepository(watched.db(dbName));
      // The lookups' queries, not those the repository makes at start (filling in webhook token hashes).
      watched.on("commandStarted", (e) => {
        if (e.commandName === "find") commands.push(e.command.filter as Record<string, unknown>);
      });
      expect((await watchedRepo.find(org, named[7]?._id ?? ""))?.slug).toBe("p-7");
      expect((await watchedRepo.find(org, "p-12"))?._id).toBe(named[12]?._id);
      expect((await watchedRepo.find(org, uuidLike.slug))?._id).toBe(uuidLike._id);
      expect(await watchedRepo.find(randomUUID(), named[7]?._id ?? "")).toBeNull();
    } finally {
      await watched.close();
    }
    // Each query names the id, or the organization and the slug (both on an index); none has an $or to scan.
    for (const filter of commands) {
      expect(filter).not.toHaveProperty("$or");
      expect(Object.keys(filter).sort()).toEqual(
        expect.arrayContaining(filter._id ? ["_id"] : ["organizationId", "slug"]),
      );
    }
  });

  it("finds a pipeline by its badge token in any organization, and nothing for an unknown token", async () => {
    const token = randomUUID();
    const p = { ...doc(randomUUID(), "Badged", "badged"), badgeToken: token };
    await repo.insert(p);
    await repo.insert(doc(randomUUID(), "Other", "other"));
    expect((await repo.findByBadgeToken(token))?._id).toBe(p._id);
    expect(await repo.findByBadgeToken(randomUUID())).toBeNull();
    const indexes = await client.db(dbName).collection("pipelines").indexes();
    expect(indexes.map((i) => i.key)).toContainEqual({ badgeToken: 1 });
  });

  it("finds a pipeline by its webhook token's hash in any organization, and nothing for another hash", async () => {
    const token = randomUUID();
    const p = doc(randomUUID(), "Hooked", "hooked");
    p.provider = { ...p.provider, webhookToken: token, webhookTokenHash: webhookTokenHash(token) };
    await repo.insert(p);
    expect((await repo.findByWebhookTokenHash(webhookTokenHash(token)))?._id).toBe(p._id);
    expect(await repo.findByWebhookTokenHash(webhookTokenHash(randomUUID()))).toBeNull();
    // The token itself is not what a pipeline is found by.
    expect(await repo.findByWebhookTokenHash(token)).toBeNull();
    const indexes = await client.db(dbName).collection("pipelines").indexes();
    expect(indexes.map((i) => i.key)).toContainEqual({ "provider.webhookTokenHash": 1 });
  });

  it("fills in the webhook token hash of pipelines stored before it existed, at start", async () => {
    const token = randomUUID();
    const old = doc(randomUUID(), "Old", "old");
    old.provider = { id: "git", settings: {}, webhookToken: token };
    await client.db(dbName).collection<PipelineDoc>("pipelines").insertOne(old);
    expect(await repo.findByWebhookTokenHash(webhookTokenHash(token))).toBeNull();
    const restarted = await createMongoPipelinesRepository(client.db(dbName));
    expect((await restarted.findByWebhookTokenHash(webhookTokenHash(token)))?._id).toBe(old._id);
  });

  it("finds by slug or id, lists by name and filters by archive state", async () => {
    const org = randomUUID();
    const b = doc(org, "beta", "beta");
    await repo.insert(b);
    await repo.insert(doc(org, "Alpha", "alpha"));
    expect((await repo.find(org, b._id))?.slug).toBe("beta");
    expect((await repo.find(org, "beta"))?._id).toBe(b._id);
    expect((await repo.list(org, "active", 0, 10)).items.map((p) => p.slug)).toEqual(["alpha", "beta"]);
    const archived = await repo.setArchived(org, b._id, new Date(), new Date(), 0);
    expect(archived?.archivedAt).toBeInstanceOf(Date);
    expect(archived?.version).toBe(1);
    expect(await repo.setArchived(org, b._id, new Date(), new Date(), 1)).toBeNull();
    expect((await repo.list(org, "active", 0, 10)).items.map((p) => p.slug)).toEqual(["alpha"]);
    expect((await repo.list(org, "archived", 0, 10)).total).toBe(1);
    expect((await repo.list(org, "all", 0, 1)).total).toBe(2);
    expect(await repo.updateActive(org, b._id, { description: "x" }, 1)).toBeNull();
  });

  it("lists only a cluster's pipelines when asked, archived ones included in all", async () => {
    const org = randomUUID();
    const cluster = randomUUID();
    const inCluster = { ...doc(org, "In", "in"), clusterId: cluster };
    await repo.insert(inCluster);
    await repo.insert({ ...doc(org, "Other", "other"), clusterId: randomUUID() });
    await repo.insert(doc(org, "None", "none"));
    await repo.insert({ ...doc(org, "Old", "old"), clusterId: cluster, archivedAt: new Date() });
    const all = await repo.list(org, "all", 0, 10, [], cluster);
    expect(all.items.map((p) => p.slug)).toEqual(["in", "old"]);
    expect(all.total).toBe(2);
    expect((await repo.list(org, "active", 0, 10, [], cluster)).total).toBe(1);
    expect((await repo.list(org, "all", 0, 10)).total).toBe(4);
  });

  it("changes a pipeline only at the version it expects, and counts its changes", async () => {
    const org = randomUUID();
    // Stored before versions existed: it has none, and is at version 0.
    const p = doc(org, "Versioned", "versioned");
    await repo.insert(p);
    expect(await repo.updateActive(org, p._id, { description: "late" }, 1)).toBeNull();
    const first = await repo.updateActive(org, p._id, { description: "one" }, 0);
    expect(first).toMatchObject({ description: "one", version: 1 });
    // A process that read version 0 before that change writes nothing.
    expect(await repo.updateActive(org, p._id, { description: "stale" }, 0)).toBeNull();
    expect(await repo.setArchived(org, p._id, new Date(), new Date(), 0)).toBeNull();
    expect(await repo.setArchived(org, p._id, new Date(), new Date(), 1)).toMatchObject({ version: 2 });
    expect(await repo.setArchived(org, p._id, null, new Date(), 2)).toMatchObject({ version: 3, archivedAt: null });
    expect((await repo.find(org, p._id))?.description).toBe("one");
  });

  it("lists an organization's active or archived pipelines by name, a page streamed from an index in its order", async () => {
    const org = randomUUID();
    for (let i = 0; i < 12; i++) await repo.insert(doc(org, `Listed ${String(i).padStart(2, "0")}`, `listed-${i}`));
    const first = (await repo.list(org, "active", 0, 12)).items;
    await repo.setArchived(org, first[3]?._id ?? "", new Date(), new Date(), 0);
    const active = await repo.list(org, "active", 0, 5);
    expect(active.total).toBe(11);
    expect(active.items.map((p) => p.slug)).toEqual(["listed-0", "listed-1", "listed-2", "listed-4", "listed-5"]);
    expect((await repo.list(org, "archived", 0, 5)).items.map((p) => p.slug)).toEqual(["listed-3"]);
    const info = await client.db("admin").command({ buildInfo: 1 });
    const isFerret = JSON.stringify(info).toLowerCase().includes("ferretdb");
    for (const state of ["active", "archived"]) {
      const filter = { organizationId: org, archiveState: state };
      const plan: Document = await client
        .db(dbName)
        .collection("pipelines")
        .find(filter)
        .sort({ nameKey: 1 })
        .limit(30)
        .explain();
      const text = JSON.stringify(plan);
      if (isFerret) {
        // SQLite's plan: the page streams from the index in name order; nothing scanned or sorted in full
        expect(text).toMatch(/USING (COVERING )?INDEX \S*org_archive_state_name/);
        expect(text).not.toMatch(/detail=SCAN|TEMP B-TREE/);
        expect(plan).toMatchObject({ filterPushdown: true, sortPushdown: true });
        // The list's count is the count command's (countOf), right for either state.
        const counted = await client.db(dbName).command({ count: "pipelines", query: filter });
        expect(counted.n).toBe(state === "active" ? 11 : 1);
      } else {
        expect(text).toContain("IXSCAN");
        expect(text).not.toContain("COLLSCAN");
      }
    }
  });

  it("fills in the archive state of pipelines stored before it, at start, and drops the index it replaced", async () => {
    const db = client.db(`${dbName}_old`);
    try {
      const org = randomUUID();
      const old = db.collection<PipelineDoc>("pipelines");
      await old.createIndex({ organizationId: 1, archivedAt: 1, nameKey: 1 }, { name: "org_archive_name_order" });
      await old.insertOne(doc(org, "Old active", "old-active"));
      await old.insertOne({ ...doc(org, "Old archived", "old-archived"), archivedAt: new Date() });
      const restarted = await createMongoPipelinesRepository(db);
      expect((await restarted.list(org, "active", 0, 10)).items.map((p) => p.slug)).toEqual(["old-active"]);
      expect((await restarted.list(org, "archived", 0, 10)).items.map((p) => p.slug)).toEqual(["old-archived"]);
      const names = (await old.listIndexes().toArray()).map((index) => String(index.name));
      expect(names).toContain("org_archive_state_name");
      expect(names).not.toContain("org_archive_name_order");
      // Again: nothing left to fill in or drop.
      await createMongoPipelinesRepository(db);
      expect((await restarted.list(org, "all", 0, 10)).total).toBe(2);
      // Unarchiving keeps the state with archivedAt.
      const archived = (await restarted.list(org, "archived", 0, 1)).items[0];
      await restarted.setArchived(org, archived?._id ?? "", null, new Date(), archived?.version ?? 0);
      expect((await restarted.list(org, "active", 0, 10)).total).toBe(2);
    } finally {
      await db.dropDatabase();
    }
  });
});
