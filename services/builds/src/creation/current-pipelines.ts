import type { Pipeline } from "@conveyor/proto/pipelines";
import { type Fences, type Logger, pipelineFence } from "@conveyor/runtime";
import { LRUCache } from "lru-cache";

/** Pipelines kept at most (each with its steps, a few KB). */
const MAX_KEPT = 1_000;

export interface CurrentPipelinesOptions {
  /**
   * The pipeline as the pipelines service holds it now (null: deleted, or not in that organization). Absent in unit
   * tests, where the caller's copy is current.
   */
  read?: (organizationId: string, id: string) => Promise<Pipeline | null>;
  /**
   * The pipelines' fences: every change a build depends on raised its pipeline's fence to its version before it was
   * acknowledged, so a copy whose version is at least the fence read now is current.
   */
  fences?: Pick<Fences, "read">;
  logger: Logger;
  max?: number;
}

/**
 * The pipelines builds are created for, as they hold now: whether a build may be created, and from which steps, is
 * decided on what holds now. A copy (the caller's, or one kept from an earlier read) is used while its fence shows
 * it current, otherwise the pipeline is read again. The newest copy of each is kept, so a create that names its
 * pipeline by id reads nothing but the fence.
 */
export function createCurrentPipelines(opts: CurrentPipelinesOptions) {
  const kept = new LRUCache<string, Pipeline>({ max: opts.max ?? MAX_KEPT });
  const keep = (p: Pipeline) => {
    const had = kept.get(p.id);
    if (!had || had.version <= p.version) kept.set(p.id, p);
  };
  /** Whether the fence shows the copy is current; false when the fence cannot be read (NATS down). */
  const currentByFence = async (p: Pipeline) => {
    if (!opts.fences) return false;
    try {
      return p.version >= (await opts.fences.read(pipelineFence(p.id)));
    } catch (err) {
      opts.logger.debug({ err, pipelineId: p.id }, "pipeline fence unreadable: reading the pipeline again");
      return false;
    }
  };
  const readNow = async (read: NonNullable<CurrentPipelinesOptions["read"]>, organizationId: string, id: string) => {
    const now = await read(organizationId, id);
    if (now) keep(now);
    else kept.delete(id);
    return now;
  };

  return {
    /** The caller's copy when it is current, else the pipeline as it is now (null: deleted). */
    async current(copy: Pipeline): Promise<Pipeline | null> {
      if (!opts.read) return copy;
      if (await currentByFence(copy)) {
        keep(copy);
        return copy;
      }
      return readNow(opts.read, copy.organizationId, copy.id);
    },
    /** An organization's pipeline by id, as it is now (null: there is none). */
    async byId(organizationId: string, id: string): Promise<Pipeline | null> {
      const copy = kept.get(id);
      if (copy && copy.organizationId === organizationId && (await currentByFence(copy))) return copy;
      return opts.read ? readNow(opts.read, organizationId, id) : null;
    },
  };
}

export type CurrentPipelines = ReturnType<typeof createCurrentPipelines>;
