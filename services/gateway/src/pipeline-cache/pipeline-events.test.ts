import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import {
  GetPipelineResponseSchema,
  PipelineChangedSchema,
  PipelineDeletedSchema,
  PipelineSchema,
} from "@conveyor/proto/pipelines";
import { type Logger, SUBJECTS } from "@conveyor/runtime";
import { createFakeNats, waitFor } from "../testing/fake-nats.js";
import { createPipelineCache, type PipelinesClient } from "./pipeline-cache.js";
import { subscribePipelineEvents } from "./pipeline-events.js";

const logger = { info: jest.fn(), warn: jest.fn(), error: jest.fn(), fatal: jest.fn() } as unknown as Logger;
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
  jest.clearAllMocks();
});
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

/** A pipeline cache over two pipelines (both looked up once) kept current by events on a fake NATS. */
async function world() {
  const asked: string[] = [];
  const client = {
    async getPipeline(req: { pipeline?: string }) {
      asked.push(req.pipeline ?? "");
      const pipeline = create(PipelineSchema, { id: `p-${req.pipeline}`, organizationId: "o-1", slug: req.pipeline });
      return create(GetPipelineResponseSchema, { pipeline });
    },
  } as unknown as PipelinesClient;
  const cache = createPipelineCache(client, { ttlMs: 60_000 });
  const get = (slug: string) => cache.client.getPipeline({ organizationId: "o-1", pipeline: slug });
  await get("web");
  await get("api");
  const nats = createFakeNats();
  stops.push(subscribePipelineEvents(nats.nc, cache, logger));
  /** The pipelines asked of the service again (not answered from the cache) when both are looked up now. */
  const askedAgain = async () => {
    asked.length = 0;
    await get("web");
    await get("api");
    return [...asked];
  };
  return { nats, get, askedAgain };
}

const changed = (id: string) =>
  toBinary(PipelineChangedSchema, create(PipelineChangedSchema, { pipeline: { id, organizationId: "o-1" } }));
const counts = (pipelineId: string, scheduledBuilds: number) =>
  toBinary(
    PipelineCountsChangedSchema,
    create(PipelineCountsChangedSchema, { pipelineId, scheduledBuilds, at: timestampFromMs(Date.now()) }),
  );

describe("pipeline events", () => {
  it("drops a pipeline changed or deleted elsewhere, and only that one", async () => {
    const { nats, askedAgain } = await world();
    nats.publish(SUBJECTS.pipelines.updated, changed("p-web"));
    await settle();
    expect(await askedAgain()).toEqual(["web"]);
    const deleted = create(PipelineDeletedSchema, { pipelineId: "p-api" });
    nats.publish(SUBJECTS.pipelines.deleted, toBinary(PipelineDeletedSchema, deleted));
    await settle();
    expect(await askedAgain()).toEqual(["api"]);
  });

  it("puts new build counters into the cached pipeline without dropping it", async () => {
    const { nats, get, askedAgain } = await world();
    nats.publish(SUBJECTS.builds.pipelineCountsChanged, counts("p-web", 4));
    await settle();
    expect((await get("web")).pipeline?.counts?.scheduledBuilds).toBe(4);
    expect(await askedAgain()).toEqual([]);
  });

  it.each([
    ["fails (its iterator throws)", "fail"],
    ["ends", "end"],
  ] as const)("drops every pipeline when a subscription %s, and goes on with it opened again", async (_what, how) => {
    const { nats, get, askedAgain } = await world();
    const subject = SUBJECTS.builds.pipelineCountsChanged;
    nats[how](subject);
    await waitFor(() => nats.opened(subject) === 2);
    expect(logger.error).toHaveBeenCalledWith(
      expect.objectContaining({ loop: `subscription.${subject}` }),
      expect.any(String),
    );
    expect(await askedAgain()).toEqual(["web", "api"]);
    nats.publish(subject, counts("p-api", 7));
    await settle();
    expect((await get("api")).pipeline?.counts?.scheduledBuilds).toBe(7);
    // The other subscriptions were not broken: they stay open, once each.
    expect(nats.opened(SUBJECTS.pipelines.updated)).toBe(1);
  });

  it("logs an undecodable event and goes on with the next", async () => {
    const { nats, askedAgain } = await world();
    nats.publish(SUBJECTS.pipelines.archived, new Uint8Array([0xff, 0xff, 0xff]));
    nats.publish(SUBJECTS.pipelines.archived, changed("p-api"));
    await settle();
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(await askedAgain()).toEqual(["api"]);
  });
});
