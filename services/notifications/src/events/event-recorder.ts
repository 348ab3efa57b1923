import { createHash } from "node:crypto";
import type { DeliveryDoc, DeliveryRepository } from "../store/delivery-repository.js";
import { LEASE_FREE } from "../store/delivery-repository.js";
import type { DeliveryIntent, EventHandler } from "./handler.js";
import { decodeNotificationEvent, type NotificationEvent, organizationOf } from "./notification-event.js";

export interface EventRecorderDeps {
  handlers: readonly EventHandler[];
  deliveries: Pick<DeliveryRepository, "insert" | "pendingCount">;
  now: () => Date;
  /** How long a delivery is tried before it is given up. */
  retryForMs: number;
  /**
   * The most deliveries one organization may have pending: past it, new ones are stored already failed, saying so
   * (a receiver down for long, with many builds, must not grow the collection without bound).
   */
  maxPendingPerOrganization: number;
  /** Told when deliveries were stored, so this process's dispatcher looks at once. */
  stored?: () => void;
}

/** A UUID-shaped id derived from text (a delivery's id from its event and target: the same for a redelivery). */
export function derivedId(text: string): string {
  const h = createHash("sha256").update(text).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The build an event is about, for ordering; "" for agent events. */
function buildIdOf(e: NotificationEvent): string {
  if (e.type === "build") return e.build.id;
  if (e.type === "job") return e.job.buildId;
  return "";
}

/** Where a delivery comes from: its organization, the build it is about ("" for none) and the event's sequence. */
export interface DeliverySource {
  organizationId: string;
  buildId: string;
  seq: number;
}

/** The source of a stream event's deliveries. */
export function sourceOf(event: NotificationEvent): DeliverySource {
  return { organizationId: organizationOf(event), buildId: buildIdOf(event), seq: event.seq };
}

/** The delivery stored for one intent of one event (or request, such as a webhook's ping). */
export function deliveryOf(
  intent: DeliveryIntent,
  source: DeliverySource,
  eventKey: string,
  now: Date,
  retryForMs: number,
): DeliveryDoc {
  const { buildId } = source;
  return {
    _id: derivedId(`${eventKey}\0${intent.kind}\0${intent.targetKey}\0${intent.event}`),
    organizationId: source.organizationId,
    kind: intent.kind,
    event: intent.event,
    webhookId: intent.webhookId ?? "",
    host: intent.host,
    orderKey: intent.ordered && buildId ? `${intent.kind}\0${intent.targetKey}\0${buildId}` : "",
    seq: source.seq,
    request: intent.request,
    status: "pending",
    attempts: 0,
    attemptLog: [],
    createdAt: now,
    nextAttemptAt: now,
    giveUpAt: new Date(now.getTime() + retryForMs),
    leaseUntil: LEASE_FREE,
    leaseOwner: "",
    lastAttemptAt: null,
    responseCode: 0,
    error: "",
    durationMs: 0,
    finishedAt: null,
  };
}

/**
 * Handles one message of the events stream: asks every handler what to send, and stores each delivery before
 * returning (the consumer acknowledges the message only then). A handler's failure throws, so the message is
 * redelivered; deliveries stored by the first try keep their ids (derived from the event's bytes and the target),
 * so nothing is stored twice.
 */
export function createEventRecorder(deps: EventRecorderDeps) {
  return async (data: Uint8Array, subject: string, seq: number): Promise<number> => {
    const event = decodeNotificationEvent(subject, data, seq);
    if (!event) return 0;
    const eventKey = createHash("sha256").update(subject).update("\0").update(data).digest("hex");
    const intents = (await Promise.all(deps.handlers.map((h) => h.intents(event)))).flat();
    if (intents.length === 0) return 0;
    const now = deps.now();
    const source = sourceOf(event);
    const max = deps.maxPendingPerOrganization;
    const full = (await deps.deliveries.pendingCount(source.organizationId, max)) >= max;
    let stored = 0;
    for (const intent of intents) {
      const doc = deliveryOf(intent, source, eventKey, now, deps.retryForMs);
      if (full) {
        Object.assign(doc, {
          status: "failed",
          finishedAt: now,
          error: `not sent: the organization has ${max} deliveries pending (NOTIFY_MAX_PENDING)`,
        });
      }
      if (await deps.deliveries.insert(doc)) stored++;
    }
    if (stored > 0) deps.stored?.();
    return stored;
  };
}
