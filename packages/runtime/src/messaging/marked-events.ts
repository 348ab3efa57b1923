/**
 * Events of writes to one document, made durable through the outbox (outbox.ts) with a write mark
 * (docs/notifications.md#at-least-once-from-the-write-on). The builds service's build and job events and the agents
 * service's connection-state events use it:
 *
 *   record the event(s) under keys naming the document and a new mark → write, adding the mark to the document's
 *   `eventMarks` in the same command → publish each with msgID `<key>:<version>` → remove the entries (background)
 *
 * FerretDB has no transactions, so the event cannot be written in the same command as the change; the mark can. The
 * relay (every process) resolves an entry left behind by reading its document (`markedEventResolver`): the mark
 * there means the write committed, and the recorded event is published (JetStream drops a repeat of the same msgID
 * within its duplicate window; consumers are idempotent beyond it); no mark after `UNCOMMITTED_AFTER_MS` means the
 * write never happened (a lost compare-and-set, a crash before it), and the entry goes. A document keeps its last
 * `MAX_MARKS` marks, far more than the writes that can happen between a crash and the relay's next pass.
 */
import type { DescMessage } from "@bufbuild/protobuf";
import { fromBinary } from "@bufbuild/protobuf";
import { newId } from "../api/ids.js";
import type { EventPublisher } from "./nats.js";
import type { Outbox, OutboxEvent, OutboxResolver, RawPublish } from "./outbox.js";

/** How many write marks a document keeps (the latest last). */
export const MAX_MARKS = 8;
/** An entry whose mark is not on its document this long after it was recorded belongs to a write that never happened. */
export const UNCOMMITTED_AFTER_MS = 60_000;

/**
 * The outbox key of a marked write's event: the resolver's prefix, the document, the write's mark and, when one write
 * announces several events, the event's place among them. Ids and marks must not contain ":".
 */
export const markedEventKey = (prefix: string, id: string, mark: string, index?: number) =>
  index === undefined ? `${prefix}:${id}:${mark}` : `${prefix}:${id}:${mark}:${index}`;

/** The document id and write mark of a marked event's key. */
export function markedKeyParts(key: string): { id: string; mark: string } {
  const [, id = "", mark = ""] = key.split(":");
  return { id, mark };
}

/** A document's marks after a write with `mark`: the latest MAX_MARKS. */
export const withMark = (marks: readonly string[] | undefined, mark: string): string[] => [
  ...(marks ?? []).slice(-(MAX_MARKS - 1)),
  mark,
];

/**
 * Whether an entry's write committed: "publish" when its document bears the mark, "drop" when it does not and the
 * entry is older than UNCOMMITTED_AFTER_MS (or the document is gone that long), "wait" otherwise.
 */
export function commitOf(marks: readonly string[] | undefined | null, mark: string, entryAt: Date, now: Date) {
  if (marks?.includes(mark)) return "publish" as const;
  return now.getTime() - entryAt.getTime() > UNCOMMITTED_AFTER_MS ? ("drop" as const) : ("wait" as const);
}

/**
 * The outbox resolver of marked events under one prefix: publishes the recorded event once its document bears the
 * mark. `marksOf` reads the document's marks (null when there is no such document).
 */
export function markedEventResolver(
  marksOf: (id: string) => Promise<readonly string[] | null | undefined>,
  now: () => Date,
): OutboxResolver {
  return async (entry) => {
    const { id, mark } = markedKeyParts(entry.key);
    const verdict = commitOf(await marksOf(id), mark, entry.at, now());
    if (verdict === "publish") return entry.event ?? "drop";
    return verdict;
  };
}

/** One write to one document, announced by events that must not be lost (see the module doc). */
export interface MarkedWrite<T> {
  /** The document's marks before the write (as the writer read it). */
  marks: readonly string[] | undefined;
  /** The events the write announces, each under a key naming `mark` (markedEventKey); `marks` is what it will hold. */
  events(mark: string, marks: string[]): ReadonlyArray<{ key: string; event: OutboxEvent }>;
  /**
   * The write itself, which stores `marks` as the document's `eventMarks` in the same command (or appends `mark` to
   * them, when the writer's copy may lack marks another process wrote since); null when it missed.
   */
  write(marks: string[], mark: string): Promise<T | null>;
  /**
   * The events to publish once written, in the order recorded (default: the recorded ones): the same events made from
   * the document as written, which the writer's copy may not have shown in full. Each goes under its recorded entry's
   * msgID, so it and the relay's publish of the recorded one are one message to JetStream.
   */
  written?(doc: T): readonly OutboxEvent[];
}

/**
 * Records the write's events, writes, then publishes them (or forgets them when the write missed); the document as
 * written, or null. A write that throws leaves its entries to the relay, which publishes them if the mark was stored.
 */
export async function writeMarked<T>(outbox: Outbox, w: MarkedWrite<T>): Promise<T | null> {
  const mark = newId();
  const marks = withMark(w.marks, mark);
  const recorded = await outbox.recordAll(w.events(mark, marks));
  const doc = await w.write(marks, mark);
  if (!doc) {
    await outbox.discardAll(recorded);
    return null;
  }
  const events = w.written?.(doc);
  await outbox.sendAll(events ? recorded.map((entry, i) => ({ ...entry, event: events[i] ?? entry.event })) : recorded);
  return doc;
}

/**
 * Publishes recorded events through the EventPublisher of a process without NATS (unit tests): each message is
 * decoded with its subject's schema (`fallback` for subjects not listed) and published as the service always did.
 */
export function publishThroughEvents(
  events: EventPublisher,
  schemas: Readonly<Record<string, DescMessage>>,
  fallback?: DescMessage,
): RawPublish {
  return async (subject, data) => {
    const schema = schemas[subject] ?? fallback;
    if (!schema) throw new Error(`no schema for the events of ${subject}`);
    await events.publish(subject, schema, fromBinary(schema, data));
  };
}
