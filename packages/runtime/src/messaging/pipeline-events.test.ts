import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import { PipelineChangedSchema, PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import type { Logger } from "pino";
import { createFakeNats, waitFor } from "./memory-nats.js";
import { type PipelineEventsCache, subscribePipelineEvents } from "./pipeline-events.js";
import { SUBJECTS } from "./subjects.js";

const logger = { info: jest.fn(), warn: jest.fn(), error: jest.fn(), fatal: jest.fn() } as unknown as Logger;
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
  jest.clearAllMocks();
});
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

/** A cache that records what the events did to it, kept current on a fake NATS. */
function subscribed() {
  const calls: string[] = [];
  const cache: PipelineEventsCache = {
    evict: (id) => calls.push(`evict ${id}`),
    applyCounts: (id, counts, at) => calls.push(`counts ${id} ${counts.scheduledBuilds}/${counts.runningJobs} @${at}`),
    clear: () => calls.push("clear"),
  };
  const nats = createFakeNats();
  const stop = subscribePipelineEvents({ nc: nats.nc }, cache, logger);
  stops.push(stop);
  return { nats, calls, stop };
}

const changed = (id: string) =>
  toBinary(PipelineChangedSchema, create(PipelineChangedSchema, { pipeline: { id, organizationId: "o-1" } }));
const counts = (pipelineId: string, scheduledBuilds: number, at?: number) =>
  toBinary(
    PipelineCountsChangedSchema,
    create(PipelineCountsChangedSchema, {
      pipelineId,
      scheduledBuilds,
      runningJobs: 2,
      ...(at === undefined ? {} : { at: timestampFromMs(at) }),
    }),
  );

describe("subscribePipelineEvents", () => {
  it.each([
    ["created", SUBJECTS.pipelines.created],
    ["updated", SUBJECTS.pipelines.updated],
    ["archived", SUBJECTS.pipelines.archived],
    ["unarchived", SUBJECTS.pipelines.unarchived],
  ])("drops a pipeline when it is %s, and only that one", async (_what, subject) => {
    const { nats, calls } = subscribed();
    nats.publish(subject, changed("p-1"));
    nats.publish(subject, toBinary(PipelineChangedSchema, create(PipelineChangedSchema, {})));
    await settle();
    expect(calls).toEqual(["evict p-1"]);
  });

  it("drops a deleted pipeline", async () => {
    const { nats, calls } = subscribed();
    nats.publish(SUBJECTS.pipelines.deleted, toBinary(PipelineDeletedSchema, create(PipelineDeletedSchema, {})));
    const deleted = create(PipelineDeletedSchema, { pipelineId: "p-2" });
    nats.publish(SUBJECTS.pipelines.deleted, toBinary(PipelineDeletedSchema, deleted));
    await settle();
    expect(calls).toEqual(["evict p-2"]);
  });

  it("puts build counters into the cache with the time they were taken, ignoring a snapshot without one", async () => {
    const { nats, calls } = subscribed();
    nats.publish(SUBJECTS.builds.pipelineCountsChanged, counts("p-1", 4, 2_000));
    nats.publish(SUBJECTS.builds.pipelineCountsChanged, counts("p-1", 5));
    nats.publish(SUBJECTS.builds.pipelineCountsChanged, counts("", 6, 3_000));
    await settle();
    expect(calls).toEqual(["counts p-1 4/2 @2000"]);
  });

  it.each([
    ["fails (its iterator throws)", "fail"],
    ["ends", "end"],
  ] as const)("drops everything when a subscription %s, and goes on with it opened again", async (_what, how) => {
    const { nats, calls } = subscribed();
    const subject = SUBJECTS.builds.pipelineCountsChanged;
    nats[how](subject);
    await waitFor(() => nats.opened(subject) === 2);
    expect(calls).toEqual(["clear"]);
    expect(logger.error).toHaveBeenCalledWith(
      expect.objectContaining({ loop: `subscription.${subject}` }),
      expect.any(String),
    );
    nats.publish(subject, counts("p-2", 7, 1_000));
    nats.publish(SUBJECTS.pipelines.updated, changed("p-1"));
    await settle();
    expect(calls).toEqual(["clear", "counts p-2 7/2 @1000", "evict p-1"]);
    // The other subscriptions were not broken: they stay open, once each.
    expect(nats.opened(SUBJECTS.pipelines.updated)).toBe(1);
    expect(nats.opened(SUBJECTS.pipelines.deleted)).toBe(1);
  });

  it("logs an undecodable event and goes on with the next", async () => {
    const { nats, calls } = subscribed();
    nats.publish(SUBJECTS.pipelines.archived, new Uint8Array([0xff, 0xff, 0xff]));
    nats.publish(SUBJECTS.pipelines.archived, changed("p-2"));
    await settle();
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(calls).toEqual(["evict p-2"]);
  });

  it("stops every subscription, without taking their end for a break", async () => {
    const { nats, calls, stop } = subscribed();
    await stop();
    nats.publish(SUBJECTS.pipelines.updated, changed("p-1"));
    nats.publish(SUBJECTS.builds.pipelineCountsChanged, counts("p-1", 1, 1_000));
    await settle();
    expect(calls).toEqual([]);
    expect(nats.opened(SUBJECTS.pipelines.updated)).toBe(1);
  });
});
