/**
 * When a cluster may be deleted (docs/compatibility.md#clusters-and-queues). Pure.
 *
 * Not while pipelines name it: their new builds' jobs would wait for agents of a cluster that no longer exists (no
 * token can register one). The refusal names a few of them and how many there are, so that they can be moved to
 * another cluster (or made unclustered) first. Archived pipelines count: unarchived, they would build again.
 */

/** How many pipelines a refusal names by slug. */
export const NAMED_PIPELINES = 3;

/** The pipelines of a cluster as the refusal needs them: a few slugs, and how many there are. */
export interface ClusterPipelines {
  slugs: readonly string[];
  total: number;
}

/** Why a cluster whose pipelines are these may not be deleted, or null when it may. */
export function clusterPipelinesProblem(pipelines: ClusterPipelines): string | null {
  const { total } = pipelines;
  if (total <= 0) return null;
  const named = pipelines.slugs.slice(0, NAMED_PIPELINES);
  const more = total - named.length;
  const list = named.join(", ") + (more > 0 ? ` and ${more} more` : "");
  return `The cluster has ${total} pipeline${total === 1 ? "" : "s"} (${list}): move ${total === 1 ? "it" : "them"} to another cluster first`;
}
