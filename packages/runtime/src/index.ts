/**
 * The shared runtime of every Conveyor process, one folder per concept:
 * - `process/`: a backend's composition (service-main), its configuration, logger, defaults and shutdown;
 * - `rpc/`: the Connect server and clients, request ids, health, errors as callers see them, and the wire of the
 *   agent's streaming pings (agentStreamWire: the gateway serves it, the bench speaks it);
 * - `messaging/`: NATS and JetStream (domain events, the outbox, supervised loops, version fences, the events that
 *   keep a pipeline cache current);
 * - `data/`: MongoDB (the connection, grouped inserts, lease locks, duplicate keys);
 * - `concurrency/`: in-process scheduling (keyed locks, coalescing, group commit, repeated work);
 * - `crypto/`: envelope encryption of values kept at rest, and the key ring it reads from the environment;
 * - `outbound/`: requests to addresses users give (webhooks, Slack, forges), refusing internal addresses;
 * - `api/`: values and rules the public API shares (paging, scopes, enum names, pipeline steps on the wire,
 *   timestamps, text limits, ids, content versions).
 * Other packages import only from here (and their unit tests from `@conveyor/runtime/testing`: testing.ts).
 */
export * from "./api/content-version.js";
export * from "./api/enum-names.js";
export * from "./api/ids.js";
export * from "./api/paging.js";
export * from "./api/scopes.js";
export * from "./api/step-codec.js";
export * from "./api/team-names.js";
export * from "./api/text-limits.js";
export * from "./api/time.js";
export * from "./concurrency/coalesce.js";
export * from "./concurrency/group-commit.js";
export * from "./concurrency/keyed-lock.js";
export * from "./concurrency/repeat.js";
export * from "./crypto/envelope.js";
export * from "./crypto/key-ring-config.js";
export * from "./data/duplicate-key.js";
export * from "./data/insert-batcher.js";
export * from "./data/lease-lock.js";
export * from "./data/mongo.js";
export * from "./messaging/marked-events.js";
export * from "./messaging/nats.js";
export * from "./messaging/outbox.js";
export * from "./messaging/pipeline-events.js";
export * from "./messaging/subjects.js";
export * from "./messaging/supervised-loop.js";
export * from "./messaging/version-fences.js";
export * from "./outbound/address-policy.js";
export * from "./outbound/outbound-client.js";
export * from "./process/config.js";
export * from "./process/defaults.js";
export * from "./process/logger.js";
export * from "./process/service-config.js";
export * from "./process/service-main.js";
export * from "./process/shutdown.js";
export * as agentStreamWire from "./rpc/agent-stream-wire.js";
export * from "./rpc/call-errors.js";
export * from "./rpc/clients.js";
export * from "./rpc/errors.js";
export * from "./rpc/health.js";
export * from "./rpc/request-context.js";
export * from "./rpc/rpc-server.js";
export * from "./rpc/unavailable.js";
