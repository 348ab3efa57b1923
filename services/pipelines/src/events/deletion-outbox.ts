import { PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import {
  createOutbox,
  decodeEvent,
  type Logger,
  type Outbox,
  type OutboxEntry,
  type OutboxStore,
  type RawPublish,
  type Resolution,
} from "@conveyor/runtime";
import type { PipelinesRepository } from "../store/pipelines-repository.js";

/** The outbox key of a pipeline's deletion event. */
export const deletionKey = (pipelineId: string) => `pipeline_deleted:${pipelineId}`;

/** How long a recorded deletion whose pipeline still exists is kept before the relay decides it never happened. */
export const UNCOMMITTED_AFTER_MS = 60_000;

/**
 * Whether a recorded deletion happened: the event is recorded before the pipeline is deleted, so the relay
 * publishes it only once the pipeline is gone. A pipeline still there is a deletion under way (wait) or one that
 * failed or crashed before its write (dropped after UNCOMMITTED_AFTER_MS).
 */
export function deletionResolver(repo: Pick<PipelinesRepository, "find">, now: () => Date) {
  return async (entry: OutboxEntry): Promise<Resolution> => {
    if (!entry.event) return "drop";
    const e = decodeEvent(PipelineDeletedSchema, entry.event.data);
    if (!(await repo.find(e.organizationId, e.pipelineId))) return entry.event;
    return now().getTime() - entry.at.getTime() > UNCOMMITTED_AFTER_MS ? "drop" : "wait";
  };
}

/** The pipelines service's outbox: deletion events, whose consumer (identity) drops team associations and rules. */
export function createPipelinesOutbox(opts: {
  repo: Pick<PipelinesRepository, "find">;
  store: OutboxStore;
  publish: RawPublish;
  logger: Logger;
  now?: () => Date;
  graceMs?: number;
  leaseMs?: number;
}): Outbox {
  const now = opts.now ?? (() => new Date());
  return createOutbox({ ...opts, now, resolvers: { pipeline_deleted: deletionResolver(opts.repo, now) } });
}
