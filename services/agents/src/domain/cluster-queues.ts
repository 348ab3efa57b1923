/**
 * The rules of a cluster's queues (docs/compatibility.md#clusters-and-queues). Pure.
 *
 * A queue's key is what agents' `queue` tag and jobs' `queue` rule name: letters, digits, `.`, `-` and `_` (what queue tags are in practice, `deploy.eu`), at most
 * MAX_QUEUE_KEY characters. An agent registering with a cluster's token joins the queue its `queue` tag names
 * ("default" without one); once the cluster has queues, a tag naming none of them is refused at registration, as
 * Buildkite refuses it. A cluster with no queue objects yet takes any queue tag (what Conveyor did before queues were
 * objects, and what its default set-up relies on).
 */
import { DEFAULT_QUEUE } from "./agent-tags.js";

/** The longest queue key. */
export const MAX_QUEUE_KEY = 100;
/** The longest description or pause note of a queue. */
export const MAX_QUEUE_TEXT = 1000;

const KEY = /^[A-Za-z0-9._-]+$/;

/** Why `key` cannot be a queue key, or null when it can. */
export function queueKeyProblem(key: string): string | null {
  if (key === "") return "can't be blank";
  if (key.length > MAX_QUEUE_KEY) return `is too long (maximum is ${MAX_QUEUE_KEY} characters)`;
  if (!KEY.test(key)) return "may only contain letters, digits, dots, hyphens and underscores";
  return null;
}

/**
 * Why an agent of a cluster whose queues have `keys` may not register with `agentQueue` (its `queue` tag, or ""),
 * or null when it may.
 */
export function registrationQueueProblem(agentQueue: string, keys: readonly string[]): string | null {
  if (keys.length === 0) return null;
  const queue = agentQueue || DEFAULT_QUEUE;
  if (keys.includes(queue)) return null;
  const known = keys.slice(0, 10).join(", ") + (keys.length > 10 ? ", …" : "");
  return `names queue "${queue}", which is not a queue of this cluster (its queues: ${known})`;
}

/** Whether an agent of `agentQueue` gets no job because that queue's dispatch is paused. */
export function dispatchPausedFor(agentQueue: string, pausedKeys: ReadonlySet<string>): boolean {
  return pausedKeys.has(agentQueue || DEFAULT_QUEUE);
}
