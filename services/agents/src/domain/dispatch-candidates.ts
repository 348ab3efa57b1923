/**
 * Which waiting jobs an agent may be offered, best first (issue 9 item 3): jobs of the agent's cluster whose rules
 * its tags satisfy, by priority (higher first), then by how long they have been runnable. Pure.
 */
import { rulesMatch } from "./agent-tags.js";

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
}

/** The agent asking for work. */
export interface AskingAgent {
  organizationId: string;
  /** null for an agent registered with an unclustered token. */
  clusterId: string | null;
  tags: ReadonlyMap<string, string>;
}

/** Orders jobs for dispatch: higher priority first, then longer runnable, then by id (a stable tie-break). */
export function byDispatchOrder(a: WaitingJob, b: WaitingJob): number {
  return b.priority - a.priority || a.runnableAt - b.runnableAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Up to `limit` jobs `agent` may take, best first. An agent sees only its own organization's and cluster's jobs. */
export function candidatesFor(agent: AskingAgent, jobs: Iterable<WaitingJob>, limit: number): WaitingJob[] {
  const matching: WaitingJob[] = [];
  for (const job of jobs) {
    if (job.organizationId !== agent.organizationId || job.clusterId !== agent.clusterId) continue;
    if (!rulesMatch(job.agentQueryRules, agent.tags)) continue;
    matching.push(job);
  }
  return matching.sort(byDispatchOrder).slice(0, limit);
}
