/**
 * Which waiting jobs an agent may be offered, best first (issue 9 item 3): jobs of the agent's cluster whose rules
 * its tags satisfy, by priority (higher first), then by how long they have been runnable; none while the agent's
 * cluster queue has its dispatch paused. Pure.
 */
import { type CompiledRules, compileRules, matchesRules } from "./agent-tags.js";

/** A job waiting for an agent, as dispatch sees it. */
export interface WaitingJob {
  id: string;
  organizationId: string;
  /** null for a job of an unclustered pipeline. */
  clusterId: string | null;
  agentQueryRules: readonly string[];
  priority: number;
  /** Epoch milliseconds. */
  runnableAt: number;
  /** Its rules compiled, when whoever keeps the job compiled them once (compiled on each look otherwise). */
  compiledRules?: CompiledRules;
}

/** The agent asking for work. */
export interface AskingAgent {
  organizationId: string;
  /** null for an agent registered with an unclustered token. */
  clusterId: string | null;
  tags: ReadonlyMap<string, string>;
  /** True while its cluster queue's dispatch is paused (domain/cluster-queues.ts): it is offered nothing. */
  dispatchPaused?: boolean;
}

/** Orders jobs for dispatch: higher priority first, then longer runnable, then by id (a stable tie-break). */
export function byDispatchOrder(a: WaitingJob, b: WaitingJob): number {
  return b.priority - a.priority || a.runnableAt - b.runnableAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/**
 * Up to `limit` jobs `agent` may take, best first. An agent sees only its own organization's and cluster's jobs.
 * Only the best `limit` are kept while looking (a ping asks for a few among possibly thousands), not all sorted.
 */
export function candidatesFor(agent: AskingAgent, jobs: Iterable<WaitingJob>, limit: number): WaitingJob[] {
  const best: WaitingJob[] = [];
  if (limit <= 0 || agent.dispatchPaused) return best;
  for (const job of jobs) {
    if (job.organizationId !== agent.organizationId || job.clusterId !== agent.clusterId) continue;
    const worst = best[best.length - 1];
    if (best.length >= limit && worst && byDispatchOrder(job, worst) >= 0) continue;
    if (!matchesRules(job.compiledRules ?? compileRules(job.agentQueryRules), agent.tags)) continue;
    // Insertion into the few kept, in order.
    let at = best.length;
    while (at > 0 && byDispatchOrder(job, best[at - 1] as WaitingJob) < 0) at--;
    best.splice(at, 0, job);
    if (best.length > limit) best.pop();
  }
  return best;
}
