import { clone, create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { GetPipelineResponseSchema, PipelineSchema } from "@conveyor/proto/pipelines";
import { createPipelineCache, type PipelinesClient } from "./pipeline-cache.js";

/** A pipelines client over two pipelines that counts its calls. */
function fakeClient() {
  const pipelines = new Map([
    ["web", create(PipelineSchema, { id: "p-web", organizationId: "o-1", slug: "web", name: "Web" })],
    ["api", create(PipelineSchema, { id: "p-api", organizationId: "o-1", slug: "api", name: "API" })],
  ]);
  const calls = { get: 0, update: 0 };
  const find = (ref: string) => [...pipelines.values()].find((p) => p.slug === ref || p.id === ref);
  const client = {
    async getPipeline(req: { organizationId?: string; pipeline?: string }) {
      calls.get++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      const p = find(req.pipeline ?? "");
      if (!p) throw new ConnectError("pipeline not found", Code.NotFound);
      return create(GetPipelineResponseSchema, { pipeline: create(PipelineSchema, p) });
    },
    async updatePipeline(req: { organizationId?: string; pipeline?: string; attributes?: { name?: string } }) {
      calls.update++;
      const p = find(req.pipeline ?? "");
      if (!p) throw new ConnectError("pipeline not found", Code.NotFound);
      p.name = req.attributes?.name ?? p.name;
      return { pipeline: p };
    },
    async archivePipeline() {
      throw new ConnectError("boom", Code.Internal);
    },
    async unarchivePipeline() {
      return {};
    },
    async createPipeline(req: { organizationId?: string; slug?: string }) {
      const p = create(PipelineSchema, { id: `p-${req.slug}`, organizationId: req.organizationId, slug: req.slug });
      pipelines.set(req.slug ?? "", p);
      return { pipeline: p };
    },
    async deletePipeline() {
      return {};
    },
  } as unknown as PipelinesClient;
  return { client, calls, pipelines };
}

describe("createPipelineCache", () => {
  it("answers repeated and concurrent lookups of a pipeline with one RPC", async () => {
    const fake = fakeClient();
    const { client } = createPipelineCache(fake.client, { ttlMs: 60_000 });
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => client.getPipeline({ organizationId: "o-1", pipeline: "web" })),
    );
    expect(answers.every((a) => a.pipeline?.name === "Web")).toBe(true);
    await client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    expect(fake.calls.get).toBe(1);
  });

  it("keeps organizations and references apart", async () => {
    const fake = fakeClient();
    const { client } = createPipelineCache(fake.client, { ttlMs: 60_000 });
    await client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    await client.getPipeline({ organizationId: "o-2", pipeline: "web" });
    await client.getPipeline({ organizationId: "o-1", pipeline: "p-web" });
    expect(fake.calls.get).toBe(3);
  });

  it("does not keep errors", async () => {
    const fake = fakeClient();
    const { client } = createPipelineCache(fake.client, { ttlMs: 60_000 });
    await expect(client.getPipeline({ organizationId: "o-1", pipeline: "nope" })).rejects.toMatchObject({
      code: Code.NotFound,
    });
    await expect(client.getPipeline({ organizationId: "o-1", pipeline: "nope" })).rejects.toThrow();
    expect(fake.calls.get).toBe(2);
  });

  it("lets the caller read its own write: an update through it drops every cached answer of the pipeline", async () => {
    const fake = fakeClient();
    const { client } = createPipelineCache(fake.client, { ttlMs: 60_000 });
    await client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    await client.getPipeline({ organizationId: "o-1", pipeline: "p-web" });
    await client.updatePipeline({ organizationId: "o-1", pipeline: "web", attributes: { name: "Renamed" } });
    expect((await client.getPipeline({ organizationId: "o-1", pipeline: "web" })).pipeline?.name).toBe("Renamed");
    expect((await client.getPipeline({ organizationId: "o-1", pipeline: "p-web" })).pipeline?.name).toBe("Renamed");
    expect(fake.calls.get).toBe(4);
  });

  it("does not keep a lookup that was under way when a write changed its pipeline", async () => {
    const fake = fakeClient();
    // The lookup reads the pipeline as it stands when it reaches the service, and answers after the write.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const getPipeline = fake.client.getPipeline.bind(fake.client);
    fake.client.getPipeline = (async (req: never) => {
      const answer = clone(GetPipelineResponseSchema, await getPipeline(req));
      await held;
      return answer;
    }) as never;
    const { client } = createPipelineCache(fake.client, { ttlMs: 60_000 });
    const early = client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await client.updatePipeline({ organizationId: "o-1", pipeline: "web", attributes: { name: "Renamed" } });
    release();
    // Its callers get what it read; the next lookup reads the write.
    expect((await early).pipeline?.name).toBe("Web");
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await client.getPipeline({ organizationId: "o-1", pipeline: "web" })).pipeline?.name).toBe("Renamed");
  });

  it("drops the cached answers even when the write fails", async () => {
    const fake = fakeClient();
    const { client } = createPipelineCache(fake.client, { ttlMs: 60_000 });
    await client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    await expect(client.archivePipeline({ organizationId: "o-1", pipeline: "web" })).rejects.toThrow("boom");
    await client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    expect(fake.calls.get).toBe(2);
  });

  it("drops a pipeline on an event, and only that one", async () => {
    const fake = fakeClient();
    const cache = createPipelineCache(fake.client, { ttlMs: 60_000 });
    await cache.client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    await cache.client.getPipeline({ organizationId: "o-1", pipeline: "api" });
    cache.evict("p-web");
    await cache.client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    await cache.client.getPipeline({ organizationId: "o-1", pipeline: "api" });
    expect(fake.calls.get).toBe(3);
  });

  it("puts newer build counters into cached answers and ignores older ones", async () => {
    const fake = fakeClient();
    const cache = createPipelineCache(fake.client, { ttlMs: 60_000 });
    await cache.client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    const counts = (n: number) => ({
      scheduledBuilds: n,
      runningBuilds: 0,
      scheduledJobs: 0,
      runningJobs: 0,
      waitingJobs: 0,
    });
    cache.applyCounts("p-web", counts(3), 2000);
    cache.applyCounts("p-web", counts(1), 1000);
    const { pipeline } = await cache.client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    expect(pipeline?.counts?.scheduledBuilds).toBe(3);
    expect(fake.calls.get).toBe(1);
  });

  it("drops every cached answer when cleared, and applies counters again however old", async () => {
    const fake = fakeClient();
    const cache = createPipelineCache(fake.client, { ttlMs: 60_000 });
    const get = (pipeline: string) => cache.client.getPipeline({ organizationId: "o-1", pipeline });
    await get("web");
    await get("api");
    const counts = { scheduledBuilds: 3, runningBuilds: 0, scheduledJobs: 0, runningJobs: 0, waitingJobs: 0 };
    cache.applyCounts("p-web", counts, 2000);
    cache.clear();
    await get("web");
    await get("api");
    expect(fake.calls.get).toBe(4);
    cache.applyCounts("p-web", { ...counts, scheduledBuilds: 1 }, 1000);
    expect((await get("web")).pipeline?.counts?.scheduledBuilds).toBe(1);
  });

  it("asks again once the TTL has passed, and not at all with a TTL of 0", async () => {
    const fake = fakeClient();
    const { client } = createPipelineCache(fake.client, { ttlMs: 20 });
    await client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    await new Promise((resolve) => setTimeout(resolve, 40));
    await client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    expect(fake.calls.get).toBe(2);
    const off = createPipelineCache(fake.client, { ttlMs: 0 });
    await off.client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    await off.client.getPipeline({ organizationId: "o-1", pipeline: "web" });
    expect(fake.calls.get).toBe(4);
  });
});

describe("createPipelineCache's change listeners", () => {
  it("are told of evictions, clears and pipelines created, updated or archived through it", async () => {
    const fake = fakeClient();
    const cache = createPipelineCache(fake.client, { ttlMs: 60_000 });
    let told = 0;
    cache.onChange(() => told++);
    cache.evict("p-web");
    cache.clear();
    await cache.client.updatePipeline({ organizationId: "o-1", pipeline: "web", attributes: { name: "W" } });
    const made = await cache.client.createPipeline({ organizationId: "o-1", slug: "new" } as never);
    expect(made.pipeline?.id).toBe("p-new");
    expect(told).toBe(4);
    cache.applyCounts("p-web", {} as never, Date.now());
    expect(told).toBe(4);
  });
});
