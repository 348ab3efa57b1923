import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  ArchivePipelineRequestSchema,
  CreatePipelineRequestSchema,
  DeletePipelineRequestSchema,
  GetPipelineRequestSchema,
  type PipelinesService,
  UnarchivePipelineRequestSchema,
  UpdatePipelineRequestSchema,
} from "@conveyor/proto/pipelines";
import {
  connectNats,
  createEventPublisher,
  createLogger,
  createMongoOutboxStore,
  type Fences,
  jetStreamPublish,
  type NatsHandle,
  type OutboxDoc,
  openFences,
  pipelineFence,
} from "@conveyor/runtime";
import { MongoClient } from "mongodb";
import { createPipelinesOutbox } from "./events/deletion-outbox.js";
import { createPipelinesService } from "./pipelines-service.js";
import { createMemoryScheduleRepository } from "./store/memory-schedule-repository.js";
import {
  createMongoPipelinesRepository,
  type PipelineDoc,
  type PipelinesRepository,
} from "./store/pipelines-repository.js";

// The pipelines service over its real repository and the real fences on NATS JetStream: every change a build's
// admission or plan depends on raises the pipeline's fence to the version it writes, before it writes it.
const dbName = `it_pipelines_fences_${Date.now()}`;
const logger = createLogger("test", "silent");
let mongo: MongoClient;
let nats: NatsHandle;
let repo: PipelinesRepository;
let fences: Fences;
/** The stored version of the pipeline at each raise, and whether raises fail ("NATS down"). */
const raises: Array<{ to: number; storedThen: number }> = [];
let fencesDown = false;
/** Runs once before the next updateActive: another process's change between a read and a write. */
let beforeNextUpdate: (() => Promise<void>) | undefined;
let service: ServiceImpl<typeof PipelinesService>;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  nats = await connectNats(process.env.NATS_URL ?? "", "it-pipeline-fences", logger);
  fences = await openFences(nats.nc);
  const db = mongo.db(dbName);
  repo = await createMongoPipelinesRepository(db);
  const racing: PipelinesRepository = {
    ...repo,
    async updateActive(...args) {
      const race = beforeNextUpdate;
      beforeNextUpdate = undefined;
      await race?.();
      return repo.updateActive(...args);
    },
  };
  const outbox = createPipelinesOutbox({
    repo,
    store: await createMongoOutboxStore(db.collection<OutboxDoc>("outbox")),
    publish: jetStreamPublish(nats.js),
    logger,
  });
  service = createPipelinesService({
    repo: racing,
    schedules: createMemoryScheduleRepository().repo,
    events: createEventPublisher(nats.js, logger),
    outbox,
    clusters: { getCluster: async () => ({}) } as never,
    fences: {
      async raise(key, to) {
        if (fencesDown) throw new Error("NATS is down");
        const id = key.slice("pipelines.".length);
        const stored = await mongo.db(dbName).collection<PipelineDoc>("pipelines").findOne({ _id: id });
        raises.push({ to, storedThen: stored?.version ?? 0 });
        await fences.raise(key, to);
      },
    },
  });
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
  await nats.close();
});

async function pipeline(): Promise<PipelineDoc> {
  const created = await service.createPipeline(
    create(CreatePipelineRequestSchema, {
      organizationId: randomUUID(),
      attributes: {
        name: `P ${randomUUID().slice(0, 8)}`,
        repository: "git@example.com:a/b.git",
        clusterId: randomUUID(),
        configuration: "steps:\n  - command: make\n",
      },
    }),
    {} as never,
  );
  const doc = await repo.find(created.pipeline?.organizationId ?? "", created.pipeline?.id ?? "");
  if (!doc) throw new Error("pipeline not stored");
  return doc;
}

const ref = (p: PipelineDoc) =>
  ({ organizationId: p.organizationId, pipeline: p._id }) as { organizationId: string; pipeline: string };
const update = (p: PipelineDoc, attributes: { description?: string; name?: string }) =>
  create(UpdatePipelineRequestSchema, { ...ref(p), attributes });
const fenceOf = (p: PipelineDoc) => fences.read(pipelineFence(p._id));
const stored = async (p: PipelineDoc) => (await repo.find(p.organizationId, p._id))?.version ?? 0;

describe("pipeline changes behind their fence", () => {
  it("raises the fence to the version each change writes, before writing it, and answers that version", async () => {
    const p = await pipeline();
    expect(await fenceOf(p)).toBe(0);
    raises.length = 0;
    const updated = await service.updatePipeline(update(p, { description: "one" }), {} as never);
    expect(updated.pipeline?.version).toBe(1);
    const archived = await service.archivePipeline(create(ArchivePipelineRequestSchema, ref(p)), {} as never);
    expect(archived.pipeline?.version).toBe(2);
    const unarchived = await service.unarchivePipeline(create(UnarchivePipelineRequestSchema, ref(p)), {} as never);
    expect(unarchived.pipeline?.version).toBe(3);
    // Each raise came while the pipeline still held the version before it.
    expect(raises).toEqual([
      { to: 1, storedThen: 0 },
      { to: 2, storedThen: 1 },
      { to: 3, storedThen: 2 },
    ]);
    expect(await fenceOf(p)).toBe(3);
    expect((await service.getPipeline(create(GetPipelineRequestSchema, ref(p)), {} as never)).pipeline?.version).toBe(
      3,
    );

    await service.deletePipeline(create(DeletePipelineRequestSchema, ref(p)), {} as never);
    expect(await fenceOf(p)).toBe(4);
  });

  it("raises nothing for a change it refuses", async () => {
    const p = await pipeline();
    raises.length = 0;
    await expect(service.updatePipeline(update(p, { name: "" }), {} as never)).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
    await expect(
      service.unarchivePipeline(create(UnarchivePipelineRequestSchema, ref(p)), {} as never),
    ).rejects.toThrow(/could not be unarchived/);
    await service.archivePipeline(create(ArchivePipelineRequestSchema, ref(p)), {} as never);
    await expect(service.archivePipeline(create(ArchivePipelineRequestSchema, ref(p)), {} as never)).rejects.toThrow(
      /could not be archived/,
    );
    await expect(service.updatePipeline(update(p, { description: "x" }), {} as never)).rejects.toThrow(/archived/);
    expect(raises.map((r) => r.to)).toEqual([1]);
    expect(await fenceOf(p)).toBe(1);
  });

  it("writes nothing when the fence cannot be raised", async () => {
    const p = await pipeline();
    fencesDown = true;
    try {
      await expect(service.updatePipeline(update(p, { description: "lost" }), {} as never)).rejects.toThrow(
        /NATS is down/,
      );
      await expect(service.archivePipeline(create(ArchivePipelineRequestSchema, ref(p)), {} as never)).rejects.toThrow(
        /NATS is down/,
      );
      await expect(service.deletePipeline(create(DeletePipelineRequestSchema, ref(p)), {} as never)).rejects.toThrow(
        /NATS is down/,
      );
    } finally {
      fencesDown = false;
    }
    const after = await repo.find(p.organizationId, p._id);
    expect(after).toMatchObject({ description: null, archivedAt: null });
    expect(after?.version ?? 0).toBe(0);
  });

  it("makes a change again on what another process wrote between its read and its write", async () => {
    const p = await pipeline();
    raises.length = 0;
    beforeNextUpdate = async () => {
      // Another pipelines process: raises and writes version 1 first.
      await fences.raise(pipelineFence(p._id), 1);
      await repo.updateActive(p.organizationId, p._id, { repository: "git@example.com:other/repo.git" }, 0);
    };
    const updated = await service.updatePipeline(update(p, { description: "mine" }), {} as never);
    expect(updated.pipeline).toMatchObject({
      version: 2,
      description: "mine",
      repository: "git@example.com:other/repo.git",
    });
    expect(raises.map((r) => r.to)).toEqual([1, 2]);
    expect(await fenceOf(p)).toBe(2);
    expect(await stored(p)).toBe(2);
  });
});
