/**
 * Agent tags and the agent query rules of jobs (docs/compatibility.md#branch-filters-and-agent-targeting "Agent targeting"). Pure.
 *
 * An agent's tags are "key=value" strings; its queue is its `queue` tag, "default" without one. A job's rules are
 * "key=value" strings too; every rule must match: the agent has that tag, and the value matches, where `*` in the
 * rule's value matches any run of characters (so `os=*` means "has an os tag" and `os=linux*` matches
 * `linux-arm64`). A job without a `queue` rule runs in the "default" queue, so it never goes to an agent of
 * another queue.
 */
import {
  compileWildcard,
  DEFAULT_QUEUE,
  isQueuePattern,
  matchesWildcard,
  parseTags,
  queueOf,
  type Wildcard,
} from "@conveyor/ci-rules";

// The queue rule is shared with the builds service, which names a new job's cluster queue by it.
export { DEFAULT_QUEUE, parseTags, queueOf };

/**
 * A job's rules made ready to be matched against many agents: parsed and compiled once, where a ping of each agent
 * would otherwise parse them again for every waiting job it looks at.
 */
export interface CompiledRules {
  /** The queue the rules name exactly ("default" when they name none), or null when their queue is a pattern. */
  queue: string | null;
  queuePattern: Wildcard;
  /** Every other rule: the tag it needs and the pattern its value must match. */
  others: ReadonlyArray<readonly [string, Wildcard]>;
}

/** Compiles a job's rules (see rulesMatch). */
export function compileRules(rules: readonly string[]): CompiledRules {
  const wanted = parseTags(rules);
  // The queue is compared with its default on both sides.
  const queue = queueOf(rules);
  wanted.delete("queue");
  return {
    queue: isQueuePattern(queue) ? null : queue,
    queuePattern: compileWildcard(queue),
    others: [...wanted].map(([key, pattern]) => [key, compileWildcard(pattern)] as const),
  };
}

/** Whether an agent with these tags may run a job with these compiled rules. */
export function matchesRules(rules: CompiledRules, agentTags: ReadonlyMap<string, string>): boolean {
  if (!matchesWildcard(rules.queuePattern, agentTags.get("queue") || DEFAULT_QUEUE)) return false;
  for (const [key, pattern] of rules.others) {
    const value = agentTags.get(key);
    if (value === undefined || !matchesWildcard(pattern, value)) return false;
  }
  return true;
}

/** Whether an agent with these tags may run a job with these rules. */
export function rulesMatch(rules: readonly string[], agentTags: ReadonlyMap<string, string>): boolean {
  return matchesRules(compileRules(rules), agentTags);
}

/** The problem with a list of agent tags, or null: each is "key=value" with a non-empty key, bounded in size. */
export function tagsProblem(tags: readonly string[]): string | null {
  if (tags.length > 100) return "an agent may have at most 100 tags";
  for (const tag of tags) {
    if (tag.length > 1024) return "each tag must be at most 1024 characters";
    if (/\p{Cc}/u.test(tag)) return "tags must not contain control characters";
  }
  return null;
}
