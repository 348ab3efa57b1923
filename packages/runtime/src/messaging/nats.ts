import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  AckPolicy,
  type ConsumerConfig,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "pino";
import type { OutboxEvent, RawPublish } from "./outbox.js";
import { superviseLoop } from "./supervised-loop.js";

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

/** Whether `err` is JetStream's API error `code` (a stream or consumer not found, …). */
export function isApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

/**
 * Makes sure a stream exists: created when JetStream says there is none (another process creating it at the same
 * moment is fine); any other error (NATS unreachable, JetStream disabled, a timeout) is thrown, never taken for
 * "missing". Returns the stream's info.
 */
export async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }) {
  try {
    return await jsm.streams.info(config.name);
  } catch (err) {
    if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
  }
  try {
    return await jsm.streams.add(config);
  } catch (err) {
    // Created by another process between the two calls: what it made is what this one wanted.
    return await jsm.streams.info(config.name).catch(() => {
      throw err;
    });
  }
}

/** Connects to NATS and makes sure the events stream exists. */
export async function connectNats(url: string, name: string, logger: Logger): Promise<NatsHandle> {
  const nc = await connectNatsClient(url, name);
  await ensureStream(await jetstreamManager(nc), { name: EVENTS_STREAM, subjects: [EVENTS_SUBJECTS] });
  logger.info({ url }, "connected to NATS");
  return { nc, js: jetstream(nc), close: () => nc.drain() };
}

/** The settings of a durable consumer that can change after it was made (JetStream updates these in place). */
const UPDATABLE: ReadonlyArray<keyof ConsumerConfig> = ["filter_subject", "ack_wait", "max_deliver", "max_ack_pending"];

/**
 * Makes sure a durable consumer exists with `config`: created when missing; when it exists with other settings, the
 * ones JetStream can change are updated (a consumer made by an earlier version follows the new code), and a setting
 * it cannot change (its deliver policy) is logged. Any error other than "not found" is thrown.
 */
export async function ensureConsumer(
  jsm: JetStreamManager,
  stream: string,
  config: Partial<ConsumerConfig> & { durable_name: string },
  logger: Pick<Logger, "warn" | "info">,
): Promise<void> {
  let existing: ConsumerConfig | undefined;
  try {
    existing = (await jsm.consumers.info(stream, config.durable_name)).config;
  } catch (err) {
    if (!isApiError(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
  }
  if (!existing) {
    try {
      await jsm.consumers.add(stream, config);
      return;
    } catch (err) {
      // Made by another replica meanwhile: compare with what it made.
      existing = await jsm.consumers
        .info(stream, config.durable_name)
        .then((i) => i.config)
        .catch(() => {
          throw err;
        });
    }
  }
  const changed = UPDATABLE.filter((k) => config[k] !== undefined && existing[k] !== config[k]);
  if (changed.length > 0) {
    const update = Object.fromEntries(changed.map((k) => [k, config[k]]));
    await jsm.consumers.update(stream, config.durable_name, update);
    logger.info({ consumer: config.durable_name, changed }, "durable consumer's settings updated");
  }
  if (config.deliver_policy !== undefined && existing.deliver_policy !== config.deliver_policy) {
    logger.warn(
      { consumer: config.durable_name, has: existing.deliver_policy, wanted: config.deliver_policy },
      "durable consumer keeps its deliver policy (JetStream cannot change it)",
    );
  }
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
  /** Handles one message; `seq` is its stream sequence (the same when it is redelivered). */
  handle(data: Uint8Array, subject: string, seq: number): Promise<void>;
  logger: Logger;
}

/**
 * Starts a durable consumer on the events stream (created when missing, its settings updated when they changed). A
 * handler failure naks the message so it is redelivered after a pause; handlers must therefore be idempotent. The
 * consumption is a supervised loop: if it breaks (the consumer deleted, NATS gone for good) it is logged and
 * started again. Returns a function that stops consuming.
 */
export async function consumeEvents(nats: NatsHandle, opts: EventConsumerOptions): Promise<() => Promise<void>> {
  const jsm = await jetstreamManager(nats.nc);
  const config = {
    durable_name: opts.durable,
    ack_policy: AckPolicy.Explicit,
    filter_subject: opts.subject,
    deliver_policy: DeliverPolicy.New,
    max_deliver: -1,
    ack_wait: 30_000_000_000,
  };
  await ensureConsumer(jsm, EVENTS_STREAM, config, opts.logger);
  let opened = 0;
  const loop = superviseLoop({
    name: `consumer.${opts.durable}`,
    logger: opts.logger,
    async open() {
      // After a break the consumer may be gone (a NATS server that lost its state): make it again.
      if (opened++ > 0) await ensureConsumer(await jetstreamManager(nats.nc), EVENTS_STREAM, config, opts.logger);
      const consumer = await nats.js.consumers.get(EVENTS_STREAM, opts.durable);
      // A consumer or stream that goes missing ends the consumption (instead of waiting for someone to make it
      // again): the loop then makes it again.
      const messages = await consumer.consume({ max_messages: 64, abort_on_missing_resource: true });
      return { items: messages, close: () => messages.close().then(() => undefined) };
    },
    async handle(msg) {
      try {
        await opts.handle(msg.data, msg.subject, msg.seq);
        msg.ack();
      } catch (err) {
        msg.nak(1_000);
        throw err;
      }
    },
  });
  return () => loop.stop();
}

/**
 * A plain (non-durable) subscription to one subject: every process receives every message, for state each process
 * keeps for itself (caches, hints). Undecodable or failing messages are logged, counted and skipped; a subscription
 * that breaks is logged, reported to `onBreak` (drop what may have missed an event) and made again (a supervised
 * loop). Returns a function that stops it.
 */
export function subscribeEvents<D extends DescMessage>(
  nats: Pick<NatsHandle, "nc">,
  subject: string,
  schema: D,
  logger: Logger,
  handle: (event: MessageShape<D>) => void | Promise<void>,
  onBreak?: (why: unknown) => void,
): () => Promise<void> {
  const loop = superviseLoop({
    name: `subscription.${subject}`,
    logger,
    open() {
      const sub = nats.nc.subscribe(subject);
      return { items: sub, close: () => sub.unsubscribe() };
    },
    handle: (msg) => handle(decodeEvent(schema, msg.data)),
    ...(onBreak ? { onBreak } : {}),
  });
  return () => loop.stop();
}
