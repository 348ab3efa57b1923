import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type CommitStatusNotifications,
  commitStatusNotifications,
  type NotifyRule,
  type PipelineStep,
  parsePipelineYaml,
} from "@conveyor/ci-rules";
import {
  type Pipeline,
  type PipelineCounts,
  PipelineCountsSchema,
  type PipelinesService,
} from "@conveyor/proto/pipelines";
import type { Client } from "@conveyor/runtime";
import { createKeyedCache, type KeyedCacheOptions } from "./keyed-cache.js";

/**
 * What the handlers read of a pipeline's YAML, derived once per change of it (docs/notifications.md#what-the-handlers-read):
 * the build's `notify:` rules, the steps when one of them has `notify:` (a job's step is found among them), and the
 * `github_commit_status` entries.
 */
export interface PipelineRules {
  /** The YAML they were read from. */
  configuration: string;
  buildNotify: NotifyRule[];
  /** The parsed steps when a command step has `notify:`; empty otherwise (no job event needs them then). */
  steps: PipelineStep[];
  commitStatuses: CommitStatusNotifications;
}

/** A pipeline as the handlers read it (shared between them: never changed by a reader) and its rules. */
export interface CachedPipeline {
  pipeline: Pipeline;
  rules: PipelineRules;
}

/** What the cache keeps of a pipeline id: its organization (asked with it) and the pipeline, or null when gone. */
interface Kept {
  organizationId: string;
  cached: (CachedPipeline & { countsAt: number }) | null;
}

/** Reads a pipeline's rules from its YAML (pure; an unparsable YAML has none). */
export function pipelineRules(configuration: string): PipelineRules {
  const parsed = configuration ? parsePipelineYaml(configuration) : null;
  const steps = parsed?.ok ? parsed.steps : [];
  return {
    configuration,
    buildNotify: parsed?.ok ? (parsed.notify ?? []) : [],
    steps: steps.some((s) => s.type === "script" && (s.notify?.length ?? 0) > 0) ? steps : [],
    commitStatuses: commitStatusNotifications(configuration),
  };
}

const notFound = (err: unknown) => err instanceof ConnectError && err.code === Code.NotFound;

/**
 * The notifications service's one cache of pipelines by (organization, id), shared by every handler: a pipeline is
 * read from the pipelines service once and kept until an event says it changed (subscribePipelineEvents of
 * @conveyor/runtime), for `ttlMs` at most (a missed event), `max` pipelines at most (least recently used first out).
 * Concurrent misses of a pipeline share one RPC. A pipeline that is gone is kept as null; other failures are not
 * kept. Its rules are derived from its YAML once: a pipeline read again with the same YAML (after the TTL) keeps
 * them.
 */
export function createPipelineCache(
  pipelines: Pick<Client<typeof PipelinesService>, "getPipeline">,
  opts: KeyedCacheOptions,
) {
  // By pipeline id (ids are UUIDs; the builds service's counters name only the id), with the organization asked.
  const cache = createKeyedCache<Kept>(opts);

  return {
    /** The pipeline and its rules, or null when it is gone. */
    async get(organizationId: string, pipelineId: string): Promise<CachedPipeline | null> {
      const read = async (stale: Kept | undefined): Promise<Kept> => {
        let pipeline: Pipeline | undefined;
        try {
          pipeline = (await pipelines.getPipeline({ organizationId, pipeline: pipelineId })).pipeline;
        } catch (err) {
          if (notFound(err)) return { organizationId, cached: null };
          throw err;
        }
        if (!pipeline) return { organizationId, cached: null };
        const before = stale?.cached?.rules;
        const rules = before?.configuration === pipeline.configuration ? before : pipelineRules(pipeline.configuration);
        return { organizationId, cached: { pipeline, rules, countsAt: 0 } };
      };
      const kept = await cache.get(pipelineId, read);
      if (kept.organizationId === organizationId) return kept.cached;
      // Asked in another organization than the kept answer's: asked of the service, as it decides.
      cache.delete(pipelineId);
      return (await cache.get(pipelineId, read)).cached;
    },
    /** Forgets a pipeline (an event said it changed). */
    evict(pipelineId: string): void {
      cache.delete(pipelineId);
    },
    /**
     * Puts newer build counters into a cached pipeline (they change with every job: dropping the pipeline each time
     * would read a busy pipeline again and again); an older snapshot than the one applied is ignored.
     */
    applyCounts(pipelineId: string, counts: Omit<PipelineCounts, "$typeName">, at: number): void {
      const cached = cache.peek(pipelineId)?.cached;
      if (!cached || cached.countsAt > at) return;
      cached.countsAt = at;
      cached.pipeline.counts = create(PipelineCountsSchema, counts);
    },
    /** Forgets every pipeline (the subscription that kept them current broke and may have missed a change). */
    clear(): void {
      cache.clear();
    },
    get size(): number {
      return cache.size;
    },
  };
}

export type PipelineCache = ReturnType<typeof createPipelineCache>;
