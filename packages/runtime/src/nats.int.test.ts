import { OrganizationCreatedSchema } from "@conveyor/proto/identity";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { createLogger } from "./logger.js";
import {
  connectNats,
  createEventPublisher,
  decodeEvent,
  EVENTS_STREAM,
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
});
