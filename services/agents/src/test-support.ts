// The harness of the agents service's unit tests: the domain's Connect service over createRouterTransport, in-memory
// repositories, the real builds service in memory (@conveyor/builds/testing) behind an interceptor that records,
// delays or fails its calls, an event recorder and a clock the tests move.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema, timestampDate } from "@bufbuild/protobuf/wkt";
import { type Code, ConnectError, createClient, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { createMemoryBuildsService, type Job, type JobUpdate, type SeedBuild } from "@conveyor/builds/testing";
import { AgentsService, type RegisterAgentRequestSchema } from "@conveyor/proto/agents";
import {
  BuildsService,
  JobEventType,
  type Job as JobMessage,
  JobStateChangedSchema,
  type TransitionJobRequestSchema,
} from "@conveyor/proto/builds";
import { createLogger, type EventPublisher, newId, SUBJECTS } from "@conveyor/runtime";
import { createAgentsDomain } from "./agents-service.js";
import type { BuildsClient } from "./dispatch/job-handoff.js";
import type { AgentDoc } from "./store/agent-repository.js";
import { createMemoryMaintainerRepository } from "./store/maintainer-repository.js";
import { createMemoryAgentRepository } from "./store/memory-agent-repository.js";
import { createMemoryClusterRepository } from "./store/memory-cluster-repository.js";
import { createMemoryQueueRepository } from "./store/memory-queue-repository.js";

// ---------------------------------------------------------------------------------------------------------------
// The builds service
// ---------------------------------------------------------------------------------------------------------------

type BuildsMethod = keyof BuildsClient;

/** A transition the builds service was asked for, as the tests read it back. */
interface TransitionCall {
  jobId: string;
  event: JobEventType;
  exitStatus: number;
  signal: string;
  signalReason: string;
  agentId: string;
  at?: Date;
}

/**
 * The builds service the agents service calls: the real one, in memory, on the tests' clock. Its calls go through an
 * interceptor that records them, waits `jitter()` event-loop turns before each (the interleaving tests randomise it)
 * and fails those `failNext` asks to. `repos` changes state behind the service's back (nobody is told, as when an
 * event was missed); `subscribe` hears its job_state_changed events, as each agents process does (main.ts).
 */
export function createBuilds(now: () => Date) {
  const memory = createMemoryBuildsService({ now });
  const calls: Array<{ method: BuildsMethod; req: unknown }> = [];
  const failures = new Map<BuildsMethod, Error[]>();

  const control = {
    repos: memory.repos,
    /** How many event-loop turns each call waits before it is made. */
    jitter: (): number => 0,
    /** The next `times` calls of `method` fail with `err` before reaching the builds service. */
    failNext(method: BuildsMethod, err: Error, times = 1) {
      failures.set(method, [...(failures.get(method) ?? []), ...Array.from({ length: times }, () => err)]);
    },
    callsOf(method: BuildsMethod): unknown[] {
      return calls.filter((c) => c.method === method).map((c) => c.req);
    },
    transitions(): TransitionCall[] {
      return control.callsOf("transitionJob").map((r) => {
        const req = r as MessageInitShape<typeof TransitionJobRequestSchema>;
        return {
          jobId: req.jobId ?? "",
          event: req.event ?? JobEventType.UNSPECIFIED,
          exitStatus: req.exitStatus ?? 0,
          signal: req.signal ?? "",
          signalReason: req.signalReason ?? "",
          agentId: req.agentId ?? "",
          ...(req.at ? { at: timestampDate(create(TimestampSchema, req.at)) } : {}),
        };
      });
    },
    /** Calls `listener` with every job the builds service announces (job_state_changed). */
    subscribe(listener: (job: JobMessage) => void) {
      memory.events.subscribe(SUBJECTS.builds.jobStateChanged, JobStateChangedSchema, (e) => {
        if (e.job) listener(e.job);
      });
    },
    /** Stores builds with their jobs as testing.ts seeds them; see SeedBuild. */
    seedBuild: (init: SeedBuild) => memory.seedBuild(init),
    /** Announces a job as it is stored now (job_state_changed). */
    announce: (jobId: string) => memory.announce(jobId),
    /** The job as the builds service stores it. */
    async job(jobId: string): Promise<Job> {
      const job = await memory.repos.builds.findJob(jobId);
      if (!job) throw new Error(`no job ${jobId}`);
      return job;
    },
    /** Changes a job in `from` behind the service's back (nobody is told); throws when it is not in `from`. */
    async change(jobId: string, from: Job["state"], update: JobUpdate): Promise<Job> {
      const job = await memory.repos.builds.updateJob(jobId, from, update);
      if (!job) throw new Error(`job ${jobId} is not ${from}`);
      return job;
    },
    /** Removes a job in `state` behind the service's back; throws when it is not in that state. */
    async remove(jobId: string, state: Job["state"]) {
      if (!(await memory.repos.builds.deleteJob(jobId, state))) throw new Error(`job ${jobId} is not ${state}`);
    },
  };

  const interceptor: Interceptor = (next) => async (req) => {
    const method = req.method.localName as BuildsMethod;
    calls.push({ method, req: req.stream ? undefined : req.message });
    for (let turns = builds.jitter(); turns > 0; turns--) await new Promise((r) => setImmediate(r));
    const err = failures.get(method)?.shift();
    if (err) throw err;
    return next(req);
  };
  const transport = createRouterTransport(({ service }) => service(BuildsService, memory.service), {
    transport: { interceptors: [interceptor] },
  });
  const client: BuildsClient = createClient(BuildsService, transport);
  // The tests set `jitter` on the returned object: the interceptor reads it from there.
  const builds = Object.assign(client, control);
  return builds;
}

/** An EventPublisher that records every (subject, value). */
export function createEventRecorder() {
  const published: Array<{ subject: string; value: Record<string, unknown> }> = [];
  const publisher: EventPublisher = {
    async publish(subject, _schema, value) {
      published.push({ subject, value: value as Record<string, unknown> });
    },
  };
  return Object.assign(publisher, {
    published,
    /** The values published on `subject`, in order. */
    on(subject: string): Array<Record<string, unknown>> {
      return published.filter((p) => p.subject === subject).map((p) => p.value);
    },
    /** The agent ids of agent events published on `subject` (agent_connected, agent_lost, ...). */
    agentsOn(subject: string): string[] {
      return published.filter((p) => p.subject === subject).map((p) => (p.value.agent as { id: string }).id);
    },
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------------------------

export const CONFIG = { pingIntervalS: 2, heartbeatIntervalS: 10, jobStatusIntervalS: 1, lostAfterMs: 60_000 };
export const T0 = Date.parse("2026-03-01T00:00:00.000Z");
export const logger = createLogger("agents-test", "silent");

export type RegisterInit = Omit<MessageInitShape<typeof RegisterAgentRequestSchema>, "$typeName">;

/** The code, message and error a call fails with; empty when it succeeds. */
export async function failure(
  promise: Promise<unknown>,
): Promise<{ code?: Code; message?: string; err?: ConnectError }> {
  try {
    await promise;
    return {};
  } catch (e) {
    const err = ConnectError.from(e);
    return { code: err.code, message: err.rawMessage, err };
  }
}

export const iso = (ts: Timestamp | undefined) => (ts ? timestampDate(ts).toISOString() : undefined);

/** A seeded pseudo-random generator (mulberry32), so an interleaving that fails can be replayed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a trigger step's job holds instead of a command (a trigger job is scheduled, but no agent runs it). */
const TRIGGER_JOB: Partial<Job> = {
  type: "trigger",
  command: null,
  queue: null,
  step: { type: "trigger", label: "deploy", pipeline: "deploy", async: true },
  trigger: { pipeline: "deploy", async: true, build: {} },
};

/**
 * One agents service (and, with `replica()`, more processes over the same stores) with an organization, a cluster
 * and a registration token of that cluster.
 */
export async function setup() {
  const agentsRepo = createMemoryAgentRepository();
  const clustersRepo = createMemoryClusterRepository();
  const queuesRepo = createMemoryQueueRepository();
  const maintainersRepo = createMemoryMaintainerRepository();
  const events = createEventRecorder();
  const clock = {
    t: T0,
    now: () => new Date(clock.t),
    advance(ms: number) {
      clock.t += ms;
    },
  };
  const builds = createBuilds(clock.now);

  /** One process of the agents service; job changes reach each process's hints as main.ts wires them. */
  const replica = () => {
    const domain = createAgentsDomain({
      clusters: clustersRepo,
      queues: queuesRepo,
      maintainers: maintainersRepo,
      agents: agentsRepo,
      builds,
      events,
      logger,
      config: CONFIG,
      now: clock.now,
    });
    builds.subscribe((job) => domain.jobChanged(job));
    const transport = createRouterTransport(({ service }) => service(AgentsService, domain.service));
    return { domain, client: createClient(AgentsService, transport) };
  };
  const { domain, client } = replica();

  /** An organization with a cluster and a registration token for it (or an unclustered one). */
  const place = async (clustered = true) => {
    const organizationId = newId();
    const cluster = clustered
      ? (await client.createCluster({ organizationId, name: "Default" })).cluster?.id
      : undefined;
    const { token, secret } = await client.createAgentToken({ organizationId, clusterId: cluster ?? "" });
    return { orgId: organizationId, clusterId: cluster ?? "", tokenId: token?.id ?? "", secret };
  };
  const home = await place();

  /** Registers an agent with the home token (or another); not yet connected. */
  const register = async (init: RegisterInit = {}, tokenId = home.tokenId) => {
    const res = await client.registerAgent({ tokenId, hostname: "box", ...init });
    return { id: res.agent?.id ?? "", accessToken: res.accessToken, res };
  };
  /** Registers and connects an agent. */
  const agent = async (init: RegisterInit = {}, tokenId = home.tokenId) => {
    const a = await register(init, tokenId);
    await client.connectAgent({ agentId: a.id });
    return a;
  };
  /** The agent as the service answers it. */
  const getAgent = async (id: string, organizationId = home.orgId) =>
    (await client.getAgent({ organizationId, id })).agent;

  /**
   * A build of the home organization and cluster (or another) with `jobs`, each a scheduled script job unless it
   * says otherwise; its scheduled jobs are announced to the hints unless `announce` is false. The jobs' ids.
   */
  const seed = async (
    jobs: Array<Partial<Job>>,
    where: { orgId?: string; clusterId?: string } = {},
    announce = true,
  ): Promise<string[]> => {
    const seeded = await builds.seedBuild({
      organizationId: where.orgId ?? home.orgId,
      clusterId: (where.clusterId ?? home.clusterId) || null,
      jobs,
      announce,
    });
    return seeded.jobs.map((j) => j.id);
  };

  /**
   * A scheduled script job (or trigger job) of the home organization and cluster, in a build of its own, announced
   * to the hints unless `announce` is false; `runnableAt` is milliseconds after T0.
   */
  const job = async (
    init: {
      orgId?: string;
      clusterId?: string;
      rules?: string[];
      priority?: number;
      runnableAt?: number;
      type?: "script" | "trigger";
    } = {},
    announce = true,
  ): Promise<string> => {
    const fields: Partial<Job> = {
      agentQueryRules: init.rules ?? [],
      priority: init.priority ?? 0,
      runnableAt: new Date(T0 + (init.runnableAt ?? 0)),
      ...(init.type === "trigger" ? TRIGGER_JOB : {}),
    };
    const [id] = await seed([fields], init, announce);
    return id ?? "";
  };

  /** A new job that an agent is offered on its ping and accepts; returns the job id and token. */
  const takeJob = async (agentId: string) => {
    const jobId = await job({ priority: 1000 });
    const offered = await client.pingAgent({ agentId });
    if (offered.jobId !== jobId) throw new Error(`offered ${offered.jobId || "nothing"}, not ${jobId}`);
    const accepted = await client.acceptJob({ agentId, jobId });
    return { jobId, jobToken: accepted.jobToken, accepted };
  };

  const authenticate = (secret: string) => client.authenticateAgentCredential({ secret });

  return {
    ...home,
    place,
    client,
    domain,
    replica,
    builds,
    events,
    clock,
    agentsRepo,
    clustersRepo,
    register,
    agent,
    getAgent,
    seed,
    job,
    takeJob,
    authenticate,
  };
}

export type World = Awaited<ReturnType<typeof setup>>;

/** The job's state and agent in the builds service. */
export const held = async (s: World, jobId: string) => {
  const job = await s.builds.job(jobId);
  return { state: job.state, agent: job.agent?.id ?? "" };
};

/** Starts an accepted job, as the agent does through the gateway before it runs the command. */
export async function start(s: World, jobId: string, agentId: string) {
  await s.builds.transitionJob({ jobId, event: JobEventType.START, agentId });
}

/** An agent document as the repository stores it (never connected, seen at T0), for tests of the repository's level. */
export const agentDoc = (id: string, overrides: Partial<AgentDoc> = {}): AgentDoc => ({
  _id: id,
  organizationId: "o",
  clusterId: null,
  tokenId: "t",
  accessTokenHash: `hash-${id}`,
  name: id,
  hostname: "box",
  os: "linux",
  arch: "amd64",
  version: "3",
  build: "1",
  userAgent: "",
  ipAddress: "",
  metaData: [],
  queue: "default",
  priority: null,
  connectionState: "never_connected",
  currentJobId: null,
  paused: false,
  pausedNote: null,
  pausedAt: null,
  stopRequested: false,
  pid: 1,
  machineId: "",
  ignoreInDispatches: false,
  createdAt: new Date(T0),
  connectedAt: null,
  disconnectedAt: null,
  lostAt: null,
  stoppedAt: null,
  lastSeenAt: new Date(T0),
  lastJobFinishedAt: null,
  ...overrides,
});
