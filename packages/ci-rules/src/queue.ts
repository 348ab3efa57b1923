/**
 * The queue of agent tags and of a job's agent query rules (docs/compatibility.md#branch-filters-and-agent-targeting
 * "Agent targeting", #clusters-and-queues). Pure; shared by dispatch (the agents service) and by the builds service,
 * which names a new job's cluster queue with the same rule dispatch matches it by.
 *
 * Tags and rules are "key=value" strings (a tag without "=" has the value ""; later ones win). Their queue is the
 * `queue` value, "default" without one. A job's `queue` rule may be a `*` pattern (`deploy*`): such a job may run in
 * several queues, so it names none of them until an agent takes it.
 */

/** The queue of agents and jobs that name none. */
export const DEFAULT_QUEUE = "default";

/** Tags as a map; a tag without "=" has the value "". Later tags win. */
export function parseTags(tags: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (const tag of tags) {
    const eq = tag.indexOf("=");
    const key = (eq < 0 ? tag : tag.slice(0, eq)).trim();
    if (key !== "") map.set(key, eq < 0 ? "" : tag.slice(eq + 1).trim());
  }
  return map;
}

/** The queue named by tags or rules: the `queue` value, else "default" (a pattern as written). */
export function queueOf(tagsOrRules: readonly string[]): string {
  return parseTags(tagsOrRules).get("queue") || DEFAULT_QUEUE;
}

/** Whether a queue a job's rules name is a `*` pattern rather than one queue. */
export function isQueuePattern(queue: string): boolean {
  return queue.includes("*");
}

/**
 * The one queue a job with these agent query rules can run in: its `queue` rule, "default" when it has none; null
 * when the rule is a pattern (only the agent that takes the job says which queue it ran in).
 */
export function exactQueueOf(agentQueryRules: readonly string[]): string | null {
  const queue = queueOf(agentQueryRules);
  return isQueuePattern(queue) ? null : queue;
}
