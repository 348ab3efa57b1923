import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Agent } from "@conveyor/proto/agents";
import type { Logger } from "@conveyor/runtime";
import { agentStreamWire as wire } from "@conveyor/runtime";
import type { GatewayClients } from "../clients/gateway-clients.js";
import { agentQueue, mayTake } from "./stream-queue.js";

/** Where a stream's messages go: the HTTP/2 response of the agent's StreamPings call (stream-route.ts). */
export interface StreamSink {
  send(action: wire.StreamAction): void;
  /** Ends the call with a gRPC status (OK after a disconnect; Unavailable when this gateway stops). */
  end(status: number, message: string): void;
}

/** Who holds a stream: the agent (its access token's) organization and cluster. */
export interface StreamAgent {
  agentId: string;
  organizationId: string;
  clusterId: string;
}

/** A job that became runnable, as job_state_changed tells it. */
export interface RunnableJob {
  id: string;
  organizationId: string;
  clusterId: string;
  agentQueryRules: readonly string[];
}

export interface AgentStreamsDeps {
  agents: Pick<GatewayClients["agents"], "pingAgent" | "getAgent">;
  builds: Pick<GatewayClients["builds"], "getJob">;
  logger: Logger;
  /** Tells the other gateways that this agent's stream is now here (they end theirs); none with one gateway. */
  announce?: (agentId: string, streamId: string) => void;
  settings?: Partial<AgentStreamSettings>;
}

export interface AgentStreamSettings {
  /** The most streams this gateway holds; more are refused with ResourceExhausted (the agent polls). */
  maxStreams: number;
  /**
   * How long an idle streaming agent goes unasked before it is asked after anyway, should an event have been missed
   * (ms): on average; between three quarters of it and one and a quarter, at random, so that streams opened together
   * are not asked together.
   */
  idleRecheckMs: number;
  /** How many idle streaming agents one runnable job is offered to before this gateway gives up on it. */
  candidatesPerJob: number;
  /** Pauses before asking again when a runnable job was not yet in the agents service's hints (ms). */
  retryDelaysMs: readonly number[];
  /** A number in [0, 1) (Math.random; a test's own to be repeatable). */
  random: () => number;
}

export const DEFAULT_STREAM_SETTINGS: AgentStreamSettings = {
  maxStreams: 10_000,
  // Each recheck is two RPCs and the agents service's reads: at 10 s, 2,000 idle streams cost the stack most of a
  // core (`npm run bench`, streams row). Events tell what changes; this only catches one missed without the
  // subscription breaking (a break rechecks every stream: recheckAll).
  idleRecheckMs: 60_000,
  candidatesPerJob: 5,
  retryDelaysMs: [50, 200, 1_000, 3_000],
  random: Math.random,
};

/** How often the streams are looked over for an agent due to be asked after (ms). */
const RECHECK_TICK_MS = 1_000;

/** After an event subscription broke, every idle agent is asked after within this long, spread at random (ms). */
export const RECHECK_ALL_SPREAD_MS = 5_000;

/** One agent's stream on this gateway and what it was last told. */
interface Entry {
  streamId: string;
  agent: StreamAgent;
  sink: StreamSink;
  queue: string;
  /** Whether the agent holds a job (assigned, running or finishing): it is not asked for another. */
  holdsJob: boolean;
  /** The last job it was told of, so that a job is told once. */
  sentJob: string;
  /** Whether it was last told to pause or to carry on; null before the first message. */
  mode: "resume" | "pause" | null;
  /** Work on this stream, one step at a time (events may arrive together). */
  chain: Promise<unknown>;
  /** A runnable job's ask of this agent is queued or running: another runnable job asks another agent. */
  asked: boolean;
  /** When (Date.now()) the agent, if idle, is asked after anyway; pushed back by every step on its stream. */
  recheckAt: number;
  ended: boolean;
}

const STOPPED_STATES = ["stopped", "disconnected"];
const UNSTARTED_JOB_STATES = ["assigned", "accepted"];

/**
 * The streaming pings this gateway holds (docs/architecture.md#streaming-pings). The agents service decides every
 * assignment exactly as for a poll: a stream only asks it on the agent's behalf (PingAgent) when something may have
 * changed for an idle agent (the stream opened, a job became runnable in its queue, its job ended, an event said it
 * changed), and tells the agent what the answer was. An agent holding a job is never pinged for it (a ping of an
 * agent running a job would mean it lost the job); its pause, resume and stop are read from the agent_changed event.
 * A job assigned by the agent's own poll (job_dispatched, agent_changed) keeps it from being asked for another. One
 * stream per agent: a new one replaces the old, here or (announced) on another gateway.
 */
export function createAgentStreams(deps: AgentStreamsDeps) {
  const settings = { ...DEFAULT_STREAM_SETTINGS, ...deps.settings };
  const { agents, builds, logger } = deps;
  const entries = new Map<string, Entry>();
  const nextRecheck = () => Date.now() + settings.idleRecheckMs * (0.75 + settings.random() / 2);

  const tell = (entry: Entry, action: wire.StreamAction) => {
    if (entry.ended) return;
    entry.sink.send(action);
  };

  const finish = (entry: Entry, status: number, message: string) => {
    if (entry.ended) return;
    entry.ended = true;
    if (entries.get(entry.agent.agentId) === entry) entries.delete(entry.agent.agentId);
    entry.sink.end(status, message);
  };

  /** Tells the agent to stop and ends the stream. */
  const disconnect = (entry: Entry, reason: string) => {
    tell(entry, { kind: "disconnect", reason });
    finish(entry, wire.GRPC_STATUS.ok, "");
  };

  /** Tells the agent of a job it holds and was not told of, if it has not started it. */
  const tellHeldJob = async (entry: Entry, jobId: string) => {
    if (jobId === entry.sentJob) return;
    const { job } = await builds.getJob({ jobId });
    if (job && UNSTARTED_JOB_STATES.includes(job.state) && job.agent?.id === entry.agent.agentId) {
      entry.sentJob = jobId;
      entry.mode = "resume";
      tell(entry, { kind: "job_assigned", jobId });
    }
  };

  /**
   * Asks the agents service what an agent this stream takes for idle should do, as its poll would, on the stream's
   * behalf (for_stream: a job it holds after all, assigned by its own poll say, is named, never taken for lost); true
   * when a job was offered.
   */
  const ask = async (entry: Entry): Promise<boolean> => {
    let res: Awaited<ReturnType<typeof agents.pingAgent>>;
    try {
      res = await agents.pingAgent({ agentId: entry.agent.agentId, forStream: true });
    } catch (err) {
      // Its credential no longer works: stopped, disconnected or gone.
      if (ConnectError.from(err).code !== Code.Unauthenticated) throw err;
      disconnect(entry, "This agent is no longer connected.");
      return false;
    }
    logger.debug(
      { agentId: entry.agent.agentId, action: res.action, jobId: res.jobId, held: res.heldJobId },
      "streaming ping: asked",
    );
    if (entry.ended) return false;
    if (res.heldJobId) {
      entry.holdsJob = true;
      entry.sentJob = res.heldJobId;
      const mode = res.action === "pause" ? "pause" : "resume";
      if (entry.mode !== mode)
        tell(entry, mode === "pause" ? { kind: "pause", reason: res.message } : { kind: "resume" });
      entry.mode = mode;
      return false;
    }
    entry.holdsJob = false;
    if (res.action === "disconnect") {
      disconnect(entry, res.message || "This agent was asked to stop.");
      return false;
    }
    if (res.action === "pause") {
      if (entry.mode !== "pause") tell(entry, { kind: "pause", reason: res.message });
      entry.mode = "pause";
      return false;
    }
    if (res.jobId !== "") {
      entry.holdsJob = true;
      if (res.jobId !== entry.sentJob) {
        entry.sentJob = res.jobId;
        entry.mode = "resume";
        tell(entry, { kind: "job_assigned", jobId: res.jobId });
      }
      return true;
    }
    if (entry.mode !== "resume") tell(entry, { kind: "resume" });
    entry.mode = "resume";
    return false;
  };

  /**
   * Brings the stream up to date with the agent as it is; true when a job was offered. The agent is read when the
   * stream opens (its queue, and a job it holds unstarted, which is told only then, `tellHeld`: one assigned to it by
   * its own poll is already known to it, and telling it twice makes it try to accept the job again after running
   * it); an event gives it (`known`); otherwise (a runnable job, a recheck) it is only asked (one call).
   */
  const update = async (entry: Entry, known?: Agent, tellHeld = false): Promise<boolean> => {
    if (!known && !tellHeld) return ask(entry);
    const agent =
      known ?? (await agents.getAgent({ organizationId: entry.agent.organizationId, id: entry.agent.agentId })).agent;
    if (entry.ended) return false;
    logger.debug(
      { agentId: entry.agent.agentId, state: agent?.connectionState, job: agent?.currentJobId, paused: agent?.paused },
      "streaming ping: update",
    );
    if (!agent || STOPPED_STATES.includes(agent.connectionState)) {
      disconnect(entry, "This agent is no longer connected.");
      return false;
    }
    entry.queue = agentQueue(agent.metaData);
    if (agent.currentJobId !== "") {
      entry.holdsJob = true;
      if (agent.paused && entry.mode !== "pause") {
        entry.mode = "pause";
        tell(entry, { kind: "pause", reason: agent.pausedNote ? `Paused: ${agent.pausedNote}` : "" });
      } else if (!agent.paused && entry.mode === "pause") {
        entry.mode = "resume";
        tell(entry, { kind: "resume" });
      }
      if (tellHeld) await tellHeldJob(entry, agent.currentJobId);
      else entry.sentJob = agent.currentJobId;
      return false;
    }
    entry.holdsJob = false;
    return ask(entry);
  };

  /** Runs `step` after the stream's earlier steps; a failure is logged (an ended agent ends the stream). */
  const enqueue = (entry: Entry, step: () => Promise<boolean>): Promise<boolean> => {
    const run = entry.chain.then(async () => {
      if (entry.ended) return false;
      entry.recheckAt = nextRecheck();
      try {
        return await step();
      } catch (err) {
        const code = ConnectError.from(err).code;
        if (code === Code.Unauthenticated || code === Code.NotFound) {
          finish(entry, wire.GRPC_STATUS.unauthenticated, "The agent's credential no longer works");
        } else {
          logger.warn({ err, agentId: entry.agent.agentId }, "streaming ping: could not bring the agent up to date");
        }
        return false;
      }
    });
    entry.chain = run;
    return run;
  };

  const idle = (entry: Entry) => !entry.ended && !entry.holdsJob && entry.mode === "resume";

  // One timer for every stream; each idle agent is asked after when it is due (not all of them at once).
  const recheck = setInterval(() => {
    const now = Date.now();
    for (const entry of entries.values()) {
      if (entry.recheckAt > now) continue;
      entry.recheckAt = nextRecheck();
      if (idle(entry)) void enqueue(entry, () => update(entry));
    }
  }, RECHECK_TICK_MS);
  recheck.unref();

  /**
   * Up to candidatesPerJob idle agents of this gateway that may take the job, none being asked for another runnable
   * job (so that jobs becoming runnable together are offered to different agents at once); `busy` when some idle
   * agent that may take it is being asked.
   */
  const candidatesFor = (job: RunnableJob): { candidates: Entry[]; busy: boolean } => {
    const candidates: Entry[] = [];
    let busy = false;
    for (const e of entries.values()) {
      if (!idle(e) || e.agent.organizationId !== job.organizationId || e.agent.clusterId !== job.clusterId) continue;
      if (!mayTake(e.queue, job.agentQueryRules)) continue;
      if (e.asked) {
        busy = true;
        continue;
      }
      candidates.push(e);
      if (candidates.length >= settings.candidatesPerJob) break;
    }
    return { candidates, busy };
  };

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  return {
    /**
     * Holds a new stream for an agent (replacing its older one); undefined when this gateway holds as many as it
     * may. The first message tells the agent where it stands.
     */
    open(agent: StreamAgent, sink: StreamSink): { streamId: string; close: () => void } | undefined {
      const old = entries.get(agent.agentId);
      if (old) finish(old, wire.GRPC_STATUS.unavailable, "Replaced by a newer stream of this agent");
      if (entries.size >= settings.maxStreams) return undefined;
      const entry: Entry = {
        streamId: randomUUID(),
        agent,
        sink,
        queue: "default",
        holdsJob: true,
        sentJob: "",
        mode: null,
        chain: Promise.resolve(),
        asked: false,
        recheckAt: nextRecheck(),
        ended: false,
      };
      entries.set(agent.agentId, entry);
      deps.announce?.(agent.agentId, entry.streamId);
      void enqueue(entry, () => update(entry, undefined, true));
      return {
        streamId: entry.streamId,
        close: () => {
          entry.ended = true;
          if (entries.get(agent.agentId) === entry) entries.delete(agent.agentId);
        },
      };
    },

    /** agent_changed: pause, resume, stop, and the end of its job reach its stream at once. */
    agentChanged(agent: Agent): Promise<boolean> | undefined {
      const entry = entries.get(agent.id);
      if (!entry) return undefined;
      return enqueue(entry, () => update(entry, agent));
    },

    /**
     * job_dispatched: a streaming agent was assigned a job, by this stream's ping or by its own poll (which told it):
     * it is not asked for another until the job ends (agent_changed). The event may arrive before this stream's own
     * ping has answered: telling the agent stays the ping's (sentJob is not touched here).
     */
    jobDispatched(agentId: string, _jobId: string): void {
      const entry = entries.get(agentId);
      if (entry) entry.holdsJob = true;
    },

    /**
     * job_state_changed to scheduled: the idle streaming agents of the job's organization, cluster and queue are asked
     * after, one at a time, until one is offered a job; an agent being asked for another runnable job is left to it,
     * so that the jobs of a parallel step reach as many agents at once. The agents service may not have heard of the
     * job yet (it follows the same event): when none was offered one, they are asked again after short pauses.
     */
    async jobRunnable(job: RunnableJob): Promise<void> {
      for (const delay of [0, ...settings.retryDelaysMs]) {
        if (delay > 0) await sleep(delay);
        const { candidates, busy } = candidatesFor(job);
        logger.debug(
          { jobId: job.id, candidates: candidates.length, busy, streams: entries.size, delay },
          "streaming ping: runnable job",
        );
        if (candidates.length === 0 && !busy) return;
        for (const entry of candidates) {
          if (!idle(entry) || entry.asked) continue;
          entry.asked = true;
          const offered = await enqueue(entry, () => (idle(entry) ? update(entry) : Promise.resolve(false))).finally(
            () => {
              entry.asked = false;
            },
          );
          if (offered) return;
        }
      }
    },

    /** Another gateway holds this agent's newer stream: this one ends (the agent keeps the newer). */
    replacedElsewhere(agentId: string, streamId: string): void {
      const entry = entries.get(agentId);
      if (entry && entry.streamId !== streamId)
        finish(entry, wire.GRPC_STATUS.unavailable, "Replaced by a newer stream");
    },

    /**
     * An event subscription broke (events may have been missed): every agent is asked after within
     * RECHECK_ALL_SPREAD_MS, spread at random rather than all at once.
     */
    recheckAll(): void {
      const now = Date.now();
      for (const entry of entries.values()) {
        entry.recheckAt = Math.min(entry.recheckAt, now + settings.random() * RECHECK_ALL_SPREAD_MS);
      }
    },

    /** Ends every stream (the gateway is stopping): Unavailable, so each agent polls and streams again elsewhere. */
    closeAll(): void {
      clearInterval(recheck);
      for (const entry of [...entries.values()]) {
        finish(entry, wire.GRPC_STATUS.unavailable, "The gateway is stopping");
      }
    },

    get size(): number {
      return entries.size;
    },
  };
}

export type AgentStreams = ReturnType<typeof createAgentStreams>;
