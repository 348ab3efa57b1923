import type { ListPipelinesRequest, ListPipelinesResponse } from "@conveyor/proto/pipelines";
import { LRUCache } from "lru-cache";

/** How long an organization page's pipeline list is kept when nothing says a pipeline changed. */
const LIST_TTL_MS = 30_000;
/** Lists kept at most (each is one page of an organization's pipelines, or of those a person's teams may read). */
const MAX_LISTS = 500;

type ListRequest = Pick<ListPipelinesRequest, "organizationId" | "archiveFilter" | "page" | "perPage" | "pipelineIds">;
type List = (req: ListRequest) => Promise<ListPipelinesResponse>;

/**
 * The organization page's ListPipelines answers, kept until any pipeline changes (`changes`: the gateway's pipeline
 * cache tells of every pipeline event and every pipeline write through this gateway) or LIST_TTL_MS pass. Pipelines
 * change rarely and the page shows none of their counters; reading 30 whole pipelines was most of its cost. A list
 * read under way when a change is told answers its callers but is not kept, so a person reads their own write.
 * Without `changes` nothing is kept.
 */
export function createPipelineLists(list: List, changes?: (listener: () => void) => void): List {
  if (!changes) return list;
  let generation = 0;
  const cache = new LRUCache<string, ListPipelinesResponse>({ max: MAX_LISTS, ttl: LIST_TTL_MS });
  changes(() => {
    generation++;
    cache.clear();
  });
  return async (req) => {
    const key = JSON.stringify([
      req.organizationId,
      req.archiveFilter,
      req.page,
      req.perPage,
      [...req.pipelineIds].sort(),
    ]);
    const kept = cache.get(key);
    if (kept) return kept;
    const began = generation;
    const res = await list(req);
    if (generation === began) cache.set(key, res);
    return res;
  };
}
