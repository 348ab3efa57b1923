import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { DispatchableJob, Job } from "@conveyor/proto/builds";
import { type AskingAgent, candidatesFor, type WaitingJob } from "./domain/dispatch-candidates.js";

/** The most jobs one refresh asks the builds service for. */
export const REFRESH_LIMIT = 1000;

function waiting(
  job: Pick<DispatchableJob, "id" | "organizationId" | "clusterId" | "agentQueryRules" | "priority" | "runnableAt">,
): WaitingJob {
  return {
    id: job.id,
    organizationId: job.organizationId,
    clusterId: job.clusterId === "" ? null : job.clusterId,
    agentQueryRules: job.agentQueryRules,
    priority: job.priority,
    runnableAt: job.runnableAt ? timestampDate(job.runnableAt).getTime() : 0,
  };
}

/**
 * What this process believes is waiting for an agent. It is a hint, never the truth: the builds service owns job
 * state, and an assignment is a compare-and-set there, so a stale hint costs one refused assignment. Job events
 * keep it current between refreshes; a refresh (every few seconds) repairs anything an event missed.
 */
export function createDispatchHints() {
  /** Waiting jobs by organization and cluster (an agent only ever sees one such scope), then by id. */
  const scopes = new Map<string, Map<string, WaitingJob>>();
  /** The scope of each known job, to forget it by id. */
  const scopeOf = new Map<string, string>();
  const key = (organizationId: string, clusterId: string | null) => `${organizationId}/${clusterId ?? ""}`;
  /** When each job was last heard of from an event (a count of events), so a refresh keeps what it could not see. */
  const heardAt = new Map<string, number>();
  let heard = 0;

  const remove = (jobId: string) => {
    heardAt.delete(jobId);
    const scope = scopeOf.get(jobId);
    if (scope === undefined) return;
    scopeOf.delete(jobId);
    const inScope = scopes.get(scope);
    inScope?.delete(jobId);
    if (inScope?.size === 0) scopes.delete(scope);
  };
  const add = (job: WaitingJob) => {
    remove(job.id);
    const scope = key(job.organizationId, job.clusterId);
    const inScope = scopes.get(scope) ?? new Map<string, WaitingJob>();
    inScope.set(job.id, job);
    scopes.set(scope, inScope);
    scopeOf.set(job.id, scope);
  };

  return {
    /** A mark to take before asking for the list a `replace` gets: events heard after it outlive the list. */
    ticket: (): number => heard,

    /**
     * Replaces the hint with the builds service's list, read after `since` (a ticket). When the list was cut at its
     * limit, jobs known from events but beyond it are kept (they fall out when an assignment refuses them or an
     * event says they moved on). Jobs heard of since the ticket are kept too: the list was read before them.
     */
    replace(list: readonly DispatchableJob[], truncated: boolean, since = Number.POSITIVE_INFINITY): void {
      if (!truncated) {
        for (const id of [...scopeOf.keys()]) if ((heardAt.get(id) ?? -1) < since) remove(id);
      }
      for (const job of list) add(waiting(job));
    },

    /** Follows a job's state change: scheduled script jobs are waiting, anything else is not. */
    jobChanged(job: Job): void {
      if (job.state === "scheduled" && job.type === "script") {
        add(waiting(job));
        heardAt.set(job.id, heard++);
      } else remove(job.id);
    },

    /** Forgets a job (assigned, or refused by the builds service). */
    remove,

    /** Up to `limit` jobs the agent may take, best first; an idle organization costs one map lookup. */
    candidates(agent: AskingAgent, limit: number): WaitingJob[] {
      const inScope = scopes.get(key(agent.organizationId, agent.clusterId));
      return inScope ? candidatesFor(agent, inScope.values(), limit) : [];
    },

    get size(): number {
      return scopeOf.size;
    },
  };
}

export type DispatchHints = ReturnType<typeof createDispatchHints>;
