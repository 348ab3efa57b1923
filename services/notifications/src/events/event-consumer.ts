import { consumeEvents, type Logger, type NatsHandle } from "@conveyor/runtime";
import type { createEventRecorder } from "./event-recorder.js";

/**
 * The durable consumers' names: `notifications-builds` and `notifications-agents` for the usual database; another
 * database (MONGODB_DATABASE) is another deployment that must hear every event itself, so its consumers are its own
 * (`notifications-<database>-builds`).
 */
export function consumerNames(database: string): { builds: string; agents: string } {
  const prefix =
    database === "conveyor_notifications" ? "notifications" : `notifications-${database.replace(/[^\w-]/g, "_")}`;
  return { builds: `${prefix}-builds`, agents: `${prefix}-agents` };
}

/**
 * The notifications service's durable consumers of the events stream: one for the builds service's events and one
 * for the agents service's, each read in stream order (so a build's events are recorded in the order they were
 * published) and acknowledged only once their deliveries are stored. Every replica consumes from the same durable
 * consumers, so each message is handled by one of them (and again after a failure).
 */
export async function consumeNotificationEvents(
  nats: NatsHandle,
  record: ReturnType<typeof createEventRecorder>,
  logger: Logger,
  database: string,
): Promise<() => Promise<void>> {
  const names = consumerNames(database);
  const handle = async (data: Uint8Array, subject: string, seq: number) => {
    await record(data, subject, seq);
  };
  const stops = await Promise.all([
    consumeEvents(nats, { durable: names.builds, subject: "ci.builds.>", logger, handle }),
    consumeEvents(nats, { durable: names.agents, subject: "ci.agents.>", logger, handle }),
  ]);
  return async () => {
    await Promise.all(stops.map((stop) => stop()));
  };
}
