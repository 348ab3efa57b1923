import { create } from "@bufbuild/protobuf";
import type { CallOptions } from "@connectrpc/connect";
import {
  type GetPipelineResponse,
  type PipelineCounts,
  PipelineCountsSchema,
  type PipelinesService,
} from "@conveyor/proto/pipelines";
import type { Client } from "@conveyor/runtime";
import { LRUCache } from "lru-cache";

/** The pipelines client, whose `getPipeline` answers come from the cache. */
export type PipelinesClient = Client<typeof PipelinesService>;

/**
 * Pipelines change rarely and nearly every REST route resolves one by slug: a gateway keeps `getPipeline` answers
 * for `ttlMs` (the backstop), drops a pipeline's answers as soon as it is changed through this gateway (the caller
 * reads its own write) or an event says it changed elsewhere (subscribePipelineEvents of @conveyor/runtime; its build
 * counters are updated in place from the builds service's snapshots), and lets concurrent lookups of one pipeline
 * share a single RPC.
 * Errors (an unknown slug) are not kept. A TTL of 0 turns it off.
 */
export function createPipelineCache(raw: PipelinesClient, opts: { ttlMs: number; max?: number }) {
  /** Cache keys of each pipeline id: a pipeline is looked up by slug and by id, in its organization. */
  const keysById = new Map<string, Set<string>>();
  const forget = (key: string, res: GetPipelineResponse) => {
    const id = res.pipeline?.id;
    const keys = id ? keysById.get(id) : undefined;
    keys?.delete(key);
    if (id && keys?.size === 0) keysById.delete(id);
  };
  /**
   * Evictions so far, and the latest of each pipeline's (and of a clear): a lookup that began before its pipeline's
   * latest eviction may carry what the write replaced, so it answers its callers but is not kept. (An eviction
   * cannot drop a lookup still under way: it is known by its pipeline's id only once it answers.)
   */
  let evictions = 0;
  const evictedAt = new Map<string, number>();
  let clearedAt = 0;
  const cache = new LRUCache<string, GetPipelineResponse, Parameters<PipelinesClient["getPipeline"]>>({
    max: opts.max ?? 10_000,
    ttl: Math.max(opts.ttlMs, 1),
    dispose: (res, key) => forget(key, res),
    fetchMethod: async (key, _stale, { context, options }) => {
      const began = evictions;
      const res = await raw.getPipeline(...context);
      const id = res.pipeline?.id;
      if (clearedAt > began || (id && (evictedAt.get(id) ?? 0) > began)) options.ttl = 1;
      else if (id) keysById.set(id, (keysById.get(id) ?? new Set()).add(key));
      return res;
    },
  });

  /** Told of every change this cache learns of (an event, a write through it): caches built on its answers. */
  const listeners: Array<() => void> = [];
  const changed = () => {
    for (const listener of listeners) listener();
  };

  /** Drops every cached answer about a pipeline. */
  const evict = (pipelineId: string) => {
    changed();
    evictedAt.set(pipelineId, ++evictions);
    if (evictedAt.size > 10_000) {
      // Forgetting them is as safe as a clear: no lookup under way is kept.
      evictedAt.clear();
      clearedAt = evictions;
    }
    for (const key of [...(keysById.get(pipelineId) ?? [])]) cache.delete(key);
    keysById.delete(pipelineId);
    countsAt.delete(pipelineId);
  };

  /**
   * Runs a write, then drops what the cache says of the pipeline it named (by the id its answer gives, else the id a
   * cached lookup of the same reference gave), whatever the write's outcome.
   */
  const evicting =
    <Req extends { organizationId?: string; pipeline?: string }, Res extends object>(
      write: (req: Req, options?: CallOptions) => Promise<Res>,
    ) =>
    async (req: Req, options?: CallOptions): Promise<Res> => {
      const known = cache.peek(keyOf(req.organizationId ?? "", req.pipeline ?? ""))?.pipeline?.id;
      try {
        const res = await write(req, options);
        const written = "pipeline" in res ? (res.pipeline as { id?: string } | undefined)?.id : undefined;
        if (written) evict(written);
        return res;
      } finally {
        if (known) evict(known);
      }
    };

  const client: PipelinesClient =
    opts.ttlMs === 0
      ? raw
      : {
          ...raw,
          async getPipeline(req, options) {
            const key = keyOf(req.organizationId ?? "", req.pipeline ?? "");
            const res = await cache.fetch(key, { context: [req, options] });
            if (!res) throw new Error(`pipeline lookup ${key} gave no answer`);
            return res;
          },
          async createPipeline(req, options) {
            try {
              return await raw.createPipeline(req, options);
            } finally {
              changed();
            }
          },
          updatePipeline: evicting(raw.updatePipeline),
          archivePipeline: evicting(raw.archivePipeline),
          unarchivePipeline: evicting(raw.unarchivePipeline),
          deletePipeline: evicting(raw.deletePipeline),
        };

  /** When each pipeline's counters were taken, as far as this cache applied them. */
  const countsAt = new Map<string, number>();

  /**
   * Puts new counters into a pipeline's cached answers (they change with every job; dropping the answers each time
   * would leave a busy pipeline never cached). An older snapshot than one applied is ignored.
   */
  const applyCounts = (pipelineId: string, counts: Omit<PipelineCounts, "$typeName">, at: number) => {
    const keys = keysById.get(pipelineId);
    if (!keys || (countsAt.get(pipelineId) ?? 0) > at) return;
    countsAt.set(pipelineId, at);
    for (const key of keys) {
      const pipeline = cache.peek(key)?.pipeline;
      if (pipeline) pipeline.counts = create(PipelineCountsSchema, counts);
    }
  };

  /** Drops every cached answer (a subscription that kept them current broke, and may have missed a change). */
  const clear = () => {
    changed();
    clearedAt = ++evictions;
    cache.clear();
    countsAt.clear();
  };
  /** Calls `listener` on every change from now on. */
  const onChange = (listener: () => void) => {
    listeners.push(listener);
  };
  return { client, evict, applyCounts, clear, onChange };
}

function keyOf(organizationId: string, pipeline: string): string {
  return `${organizationId}\n${pipeline}`;
}

export type PipelineCache = ReturnType<typeof createPipelineCache>;
