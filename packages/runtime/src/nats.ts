import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { AckPolicy, DeliverPolicy, type JetStreamClient, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { OutboxEvent, RawPublish } from "./outbox.js";

/** The one JetStream stream that holds every domain event. */
export const EVENTS_STREAM = "CI_EVENTS";
export const EVENTS_SUBJECTS = "ci.>";

export interface NatsHandle {
  nc: NatsConnection;
  js: JetStreamClient;
  close(): Promise<void>;
}

/**
 * Connects to NATS as every process does: reconnecting for ever, every half second. `noAsyncTraces`: otherwise the
 * client builds two errors (each with its stack trace) for every request and JetStream publish, only to say where a
 * failed one began; that was 6% of the builds service's CPU while it created builds. The logs name the subject.
 */
export function connectNatsClient(url: string, name: string): Promise<NatsConnection> {
  return connect({ servers: url, name, maxReconnectAttempts: -1, reconnectTimeWait: 500, noAsyncTraces: true });
}

/** Connects to NATS and makes sure the events stream exists. */
export async function connectNats(url: string, name: string, logger: Logger): Promise<NatsHandle> {
  const nc = await connectNatsClient(url, name);
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.streams.info(EVENTS_STREAM);
  } catch {
    try {
      await jsm.streams.add({ name: EVENTS_STREAM, subjects: [EVENTS_SUBJECTS] });
    } catch (err) {
      // Another service may have created it between our two calls; anything else is fatal.
      await jsm.streams.info(EVENTS_STREAM).catch(() => {
        throw err;
      });
    }
  }
  logger.info({ url }, "connected to NATS");
  return { nc, js: jetstream(nc), close: () => nc.drain() };
}

/** A typed publisher of one service's domain events. */
export interface EventPublisher {
  publish<D extends DescMessage>(subject: string, schema: D, value: MessageInitShape<D>): Promise<void>;
}

/**
 * How long a publish waits for JetStream's acknowledgement. A request that publishes waits for it, so while NATS is
 * down every such request would wait the client's default (5 s) per event; a second bounds that. A hint not
 * acknowledged in time is logged (its consumers heal by themselves); an outbox entry is published again by the relay.
 */
export const PUBLISH_ACK_TIMEOUT_MS = 1_000;

/**
 * Publishes protobuf events to JetStream; a failure is only logged, so the event is lost. For events no consumer
 * changes state from (caches and hints that heal by themselves); events with consequences go through the outbox.
 */
export function createEventPublisher(js: JetStreamClient, logger: Logger): EventPublisher {
  return {
    async publish(subject, schema, value) {
      try {
        await js.publish(subject, toBinary(schema, create(schema, value)), { timeout: PUBLISH_ACK_TIMEOUT_MS });
      } catch (err) {
        logger.warn({ err, subject }, "event publish failed");
      }
    },
  };
}

/** Publishes raw bytes with a JetStream de-duplication id (Nats-Msg-Id), for the outbox; throws when not acked. */
export function jetStreamPublish(js: Pick<JetStreamClient, "publish">): RawPublish {
  return async (subject, data, msgID) => {
    await js.publish(subject, data, { msgID, timeout: PUBLISH_ACK_TIMEOUT_MS });
  };
}

/** Encodes an event for the outbox. */
export function encodeEvent<D extends DescMessage>(
  subject: string,
  schema: D,
  value: MessageInitShape<D>,
): OutboxEvent {
  return { subject, data: toBinary(schema, create(schema, value)) };
}

/** Decodes an event payload. */
export function decodeEvent<D extends DescMessage>(schema: D, data: Uint8Array): MessageShape<D> {
  return fromBinary(schema, data);
}

/** A durable JetStream subscription: messages are handled one at a time and acked only once handled. */
export interface EventConsumerOptions {
  /** The durable consumer's name, for example "pipelines-counts". */
  durable: string;
  subject: string;
  handle(data: Uint8Array, subject: string): Promise<void>;
  logger: Logger;
}

/**
 * Starts a durable consumer on the events stream (created when missing). A handler failure naks the message so it
 * is redelivered after a pause; handlers must therefore be idempotent. Returns a function that stops consuming.
 */
export async function consumeEvents(nats: NatsHandle, opts: EventConsumerOptions): Promise<() => Promise<void>> {
  const jsm = await jetstreamManager(nats.nc);
  try {
    await jsm.consumers.info(EVENTS_STREAM, opts.durable);
  } catch {
    await jsm.consumers.add(EVENTS_STREAM, {
      durable_name: opts.durable,
      ack_policy: AckPolicy.Explicit,
      filter_subject: opts.subject,
      deliver_policy: DeliverPolicy.New,
      max_deliver: -1,
      ack_wait: 30_000_000_000,
    });
  }
  const consumer = await nats.js.consumers.get(EVENTS_STREAM, opts.durable);
  const messages = await consumer.consume({ max_messages: 64 });
  const done = (async () => {
    for await (const msg of messages) {
      try {
        await opts.handle(msg.data, msg.subject);
        msg.ack();
      } catch (err) {
        opts.logger.warn({ err, subject: msg.subject, durable: opts.durable }, "event handling failed; will retry");
        msg.nak(1_000);
      }
    }
  })();
  return async () => {
    await messages.close();
    await done;
  };
}

/**
 * A plain (non-durable) subscription to one subject: every process receives every message, for state each process
 * keeps for itself (caches, hints). Undecodable or failing messages are logged and skipped. Returns a function that
 * stops it.
 */
export function subscribeEvents<D extends DescMessage>(
  nats: Pick<NatsHandle, "nc">,
  subject: string,
  schema: D,
  logger: Logger,
  handle: (event: MessageShape<D>) => void | Promise<void>,
): () => void {
  const sub = nats.nc.subscribe(subject);
  void (async () => {
    for await (const msg of sub) {
      try {
        await handle(decodeEvent(schema, msg.data));
      } catch (err) {
        logger.warn({ err, subject }, "event not handled");
      }
    }
  })();
  return () => sub.unsubscribe();
}
