import { OrganizationCreatedSchema } from "@conveyor/proto/identity";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { createLogger } from "../process/logger.js";
import {
  connectNats,
  consumeEvents,
  createEventPublisher,
  decodeEvent,
  EVENTS_STREAM,
  ensureConsumer,
  ensureStream,
  jetStreamPublish,
  type NatsHandle,
  PUBLISH_ACK_TIMEOUT_MS,
} from "./nats.js";

// Against the stack's real nats-server with JetStream.
let handle: NatsHandle;
beforeAll(async () => {
  handle = await connectNats(process.env.NATS_URL ?? "", "it-runtime", createLogger("test", "silent"));
});
afterAll(() => handle.close());

describe("domain events on JetStream", () => {
  it("stores a published event in the ci.> stream for a durable consumer with explicit ack", async () => {
    const subject = `ci.test.org_created_${Date.now()}`;
    const jsm = await jetstreamManager(handle.nc);
    const durable = `it_${Date.now()}`;
    await jsm.consumers.add(EVENTS_STREAM, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      filter_subject: subject,
    });
    const publisher = createEventPublisher(handle.js, createLogger("test", "silent"));
    await publisher.publish(subject, OrganizationCreatedSchema, { organization: { slug: "evented" } });

    const consumer = await jetstream(handle.nc).consumers.get(EVENTS_STREAM, durable);
    const msg = await consumer.next({ expires: 5_000 });
    expect(msg).not.toBeNull();
    expect(decodeEvent(OrganizationCreatedSchema, msg?.data ?? new Uint8Array()).organization?.slug).toBe("evented");
    msg?.ack();
    await jsm.consumers.delete(EVENTS_STREAM, durable);
  });

  it("gives up on an acknowledgement that does not come within PUBLISH_ACK_TIMEOUT_MS, not the client's 5 s", async () => {
    // A plain subscriber that never answers: the publish's acknowledgement never comes, as while NATS is down.
    const subject = `hang.${Date.now()}`;
    const silent = handle.nc.subscribe(subject);
    try {
      const publisher = createEventPublisher(handle.js, createLogger("test", "silent"));
      let started = Date.now();
      await publisher.publish(subject, OrganizationCreatedSchema, { organization: { slug: "lost" } });
      expect(Date.now() - started).toBeLessThan(PUBLISH_ACK_TIMEOUT_MS + 1_500);
      started = Date.now();
      await expect(jetStreamPublish(handle.js)(subject, new Uint8Array([1]), "m-1")).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(PUBLISH_ACK_TIMEOUT_MS + 1_500);
    } finally {
      silent.unsubscribe();
    }
  });

  it("updates a durable consumer whose settings changed, and never takes an error for a missing consumer", async () => {
    const jsm = await jetstreamManager(handle.nc);
    const durable = `it_cfg_${Date.now()}`;
    const logger = createLogger("test", "silent");
    const config = {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      filter_subject: "ci.test.a",
      ack_wait: 5e9,
    };
    await ensureConsumer(jsm, EVENTS_STREAM, config, logger);
    // A later version of the code asks for another filter and ack wait: the consumer follows.
    await ensureConsumer(jsm, EVENTS_STREAM, { ...config, filter_subject: "ci.test.b", ack_wait: 7e9 }, logger);
    const info = await jsm.consumers.info(EVENTS_STREAM, durable);
    expect([info.config.filter_subject, info.config.ack_wait]).toEqual(["ci.test.b", 7e9]);
    await jsm.consumers.delete(EVENTS_STREAM, durable);
    // A stream that cannot be looked up for another reason than "not found" is an error, not a stream to make.
    await expect(ensureStream(jsm, { name: "bad.name" })).rejects.toThrow();
  });

  it("consumes again after its durable consumer was deleted under it", async () => {
    const subject = `ci.test.heal_${Date.now()}`;
    const durable = `it_heal_${Date.now()}`;
    const seen: string[] = [];
    const stop = await consumeEvents(handle, {
      durable,
      subject,
      logger: createLogger("test", "silent"),
      handle: async (data) => void seen.push(decodeEvent(OrganizationCreatedSchema, data).organization?.slug ?? ""),
    });
    const publisher = createEventPublisher(handle.js, createLogger("test", "silent"));
    const until = async (n: number) => {
      const deadline = Date.now() + 20_000;
      while (seen.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    };
    try {
      await publisher.publish(subject, OrganizationCreatedSchema, { organization: { slug: "one" } });
      await until(1);
      await (await jetstreamManager(handle.nc)).consumers.delete(EVENTS_STREAM, durable);
      // Published until the loop made the consumer again (it delivers only what is new from then on).
      const deadline = Date.now() + 20_000;
      while (seen.length < 2 && Date.now() < deadline) {
        await publisher.publish(subject, OrganizationCreatedSchema, { organization: { slug: "two" } });
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(seen.slice(0, 2)).toEqual(["one", "two"]);
    } finally {
      await stop();
    }
  }, 30_000);
});
