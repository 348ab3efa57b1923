/**
 * The queue a stream's agent is in and the queue a job asks for, to pick which idle streaming agents are asked first
 * when a job becomes runnable. A hint only: the agents service matches a job's rules against the agent's tags when
 * it assigns (services/agents/src/domain/agent-tags.ts), so a wrong guess costs a ping, never a wrong assignment.
 */
const DEFAULT_QUEUE = "default";

/** The value of a `key=value` tag or rule named `queue`, else undefined. */
function queueTag(tags: readonly string[]): string | undefined {
  for (const tag of tags) {
    const at = tag.indexOf("=");
    if (at > 0 && tag.slice(0, at).trim() === "queue") return tag.slice(at + 1).trim();
  }
  return undefined;
}

/** An agent's queue: its `queue` tag, "default" without one. */
export function agentQueue(metaData: readonly string[]): string {
  return queueTag(metaData) || DEFAULT_QUEUE;
}

/** Whether an agent of `queue` may take a job with these rules: its exact queue, or any when the rule is a pattern. */
export function mayTake(queue: string, agentQueryRules: readonly string[]): boolean {
  const wanted = queueTag(agentQueryRules) || DEFAULT_QUEUE;
  if (/[*!]/.test(wanted)) return true;
  return wanted === queue;
}
