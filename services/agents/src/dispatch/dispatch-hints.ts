import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { DispatchableJob, Job } from "@conveyor/proto/builds";
import { compileRules, DEFAULT_QUEUE } from "../domain/agent-tags.js";
import { type AskingAgent, candidatesFor, type WaitingJob } from "../domain/dispatch-candidates.js";

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
    // Made in this one literal: a spread copy adding it gave the kept jobs thousands of shapes and slowed a ping.
    compiledRules: compileRules(job.agentQueryRules),
  };
}

/** The waiting jobs of one scope, by the queue their rules name; those whose queue is a pattern apart. */
interface ScopeJobs {
  byQueue: Map<string, Map<string, WaitingJob>>;
  patterned: Map<string, WaitingJob>;
}

/** Where a job is kept: its scope, and its queue (null: among the patterned). */
interface Place {
  scope: string;
  queue: string | null;
}

function* both<T>(a: Iterable<T> | undefined, b: Iterable<T>): Iterable<T> {
  if (a) yield* a;
  yield* b;
}

/**
 * What this process believes is waiting for an agent. It is a hint, never the truth: the builds service owns job
 * state, and an assignment is a compare-and-set there, so a stale hint costs one refused assignment. Job events
 * keep it current between refreshes; a refresh (every few seconds) repairs anything an event missed.
 *
 * Within a scope, jobs are kept by the queue their rules name, with their rules compiled once: an agent's ping looks
 * only at its own queue's jobs (and those whose queue is a pattern), so thousands of jobs waiting on another queue
 * cost it nothing.
 */
export function createDispatchHints() {
  /** Waiting jobs by organization and cluster (an agent only ever sees one such scope). */
  const scopes = new Map<string, ScopeJobs>();
  /** Where each known job is kept, to forget it by id. */
  const placeOf = new Map<string, Place>();
  const key = (organizationId: string, clusterId: string | null) => `${organizationId}/${clusterId ?? ""}`;
  /** When each job was last heard of from an event (a count of events), so a refresh keeps what it could not see. */
  const heardAt = new Map<string, number>();
  let heard = 0;

  const remove = (jobId: string) => {
    heardAt.delete(jobId);
    const place = placeOf.get(jobId);
    if (place === undefined) return;
    placeOf.delete(jobId);
    const inScope = scopes.get(place.scope);
    if (!inScope) return;
    if (place.queue === null) inScope.patterned.delete(jobId);
    else {
      const inQueue = inScope.byQueue.get(place.queue);
      inQueue?.delete(jobId);
      if (inQueue?.size === 0) inScope.byQueue.delete(place.queue);
    }
    if (inScope.byQueue.size === 0 && inScope.patterned.size === 0) scopes.delete(place.scope);
  };
  const add = (job: WaitingJob) => {
    remove(job.id);
    const scope = key(job.organizationId, job.clusterId);
    const compiledRules = job.compiledRules ?? compileRules(job.agentQueryRules);
    let inScope = scopes.get(scope);
    if (!inScope) {
      inScope = { byQueue: new Map(), patterned: new Map() };
      scopes.set(scope, inScope);
    }
    const { queue } = compiledRules;
    if (queue === null) inScope.patterned.set(job.id, job);
    else {
      const inQueue = inScope.byQueue.get(queue) ?? new Map<string, WaitingJob>();
      inQueue.set(job.id, job);
      inScope.byQueue.set(queue, inQueue);
    }
    placeOf.set(job.id, { scope, queue });
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
        for (const id of [...placeOf.keys()]) if ((heardAt.get(id) ?? -1) < since) remove(id);
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

    /**
     * Up to `limit` jobs the agent may take, best first; an idle organization costs one map lookup, and jobs of other
     * queues nothing.
     */
    candidates(agent: AskingAgent, limit: number): WaitingJob[] {
      const inScope = scopes.get(key(agent.organizationId, agent.clusterId));
      if (!inScope) return [];
      const queue = agent.tags.get("queue") || DEFAULT_QUEUE;
      return candidatesFor(agent, both(inScope.byQueue.get(queue)?.values(), inScope.patterned.values()), limit);
    },

    get size(): number {
      return placeOf.size;
    },
  };
}

export type DispatchHints = ReturnType<typeof createDispatchHints>;
