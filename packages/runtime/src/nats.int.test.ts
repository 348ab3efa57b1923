import { OrganizationCreatedSchema } from "@conveyor/proto/identity";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { createLogger } from "./logger.js";
import { connectNats, createEventPublisher, decodeEvent, EVENTS_STREAM, type NatsHandle } from "./nats.js";

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
});
