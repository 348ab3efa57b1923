// The harness of the agents service's unit tests: the domain's Connect service over createRouterTransport, in-memory
// repositories, a fake builds service with the real one's compare-and-set job transitions, an event recorder and a
// clock the tests move.
import { clone, create, type MessageInitShape } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { AgentsService, type RegisterAgentRequestSchema } from "@conveyor/proto/agents";
import {
  AcceptJobResponseSchema,
  AssignJobResponseSchema,
  CountQueueJobsResponseSchema,
  type DispatchableJob,
  DispatchableJobSchema,
  GetJobResponseSchema,
  type Job,
  JobAgentSchema,
  JobEventType,
  JobSchema,
  ListDispatchableJobsResponseSchema,
  type QueueJobCountsSchema,
  type TransitionJobRequestSchema,
  TransitionJobResponseSchema,
} from "@conveyor/proto/builds";
import { createLogger, type EventPublisher, newId } from "@conveyor/runtime";
import { createAgentsDomain } from "./agents-service.js";
import type { BuildsClient } from "./dispatch/job-handoff.js";
import { createMemoryAgentRepository } from "./store/memory-agent-repository.js";
import { createMemoryClusterRepository } from "./store/memory-cluster-repository.js";

// ---------------------------------------------------------------------------------------------------------------
// Fakes
// ---------------------------------------------------------------------------------------------------------------

type BuildsMethod = keyof BuildsClient;
type QueueCounts = Omit<MessageInitShape<typeof QueueJobCountsSchema>, "$typeName">;

/** A transition the fake builds service was asked for, as the tests read it back. */
interface TransitionCall {
  jobId: string;
  event: JobEventType;
  exitStatus: number;
  signal: string;
  signalReason: string;
  agentId: string;
  at?: Date;
}

const notFoundJob = () => new ConnectError("No job found", Code.NotFound);
const refusal = (job: Job, verb: string, only: string) =>
  new ConnectError(`a job in state "${job.state}" cannot be ${verb} (only ${only} can)`, Code.FailedPrecondition);

/**
 * The builds RPCs the agents service uses, over jobs kept in a Map, with the real service's compare-and-set rules:
 * assign only a scheduled script job; accept only an assigned job, by its agent (again by the same agent answers
 * the same); START accepted → running; FINISH from running, canceling or timing_out; CANCEL before or while it
 * runs; UNASSIGN assigned → scheduled; an `agentId` guard refuses a job held by another agent. Every change is
 * announced to subscribers (the job_state_changed events main.ts feeds to `jobChanged`).
 */
export function createFakeBuilds() {
  const jobs = new Map<string, Job>();
  const calls: Array<{ method: BuildsMethod; req: unknown }> = [];
  const failures = new Map<BuildsMethod, Error[]>();
  const listeners: Array<(job: Job) => void> = [];
  const queueCounts = new Map<string, QueueCounts[]>();

  const control = {
    jobs,
    calls,
    queueCounts,
    /** How many event-loop turns each call waits before acting (the interleaving tests randomise it). */
    jitter: (): number => 0,
    /** When set, listDispatchableJobs answers this list instead of the scheduled jobs. */
    listOverride: undefined as DispatchableJob[] | undefined,
    /** The next `times` calls of `method` fail with `err`. */
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
    subscribe(listener: (job: Job) => void) {
      listeners.push(listener);
    },
    /** Stores a job; `announce` tells subscribers (a job_state_changed event), else it changes silently. */
    put(job: Job, announce = true) {
      jobs.set(job.id, clone(JobSchema, job));
      if (announce) for (const l of listeners) l(clone(JobSchema, job));
    },
    /** Changes a stored job silently (an event this process missed). */
    patch(jobId: string, patch: Partial<Omit<Job, "$typeName">>) {
      const job = jobs.get(jobId);
      if (!job) throw new Error(`no job ${jobId}`);
      jobs.set(jobId, Object.assign(clone(JobSchema, job), patch));
    },
    job(jobId: string): Job {
      const job = jobs.get(jobId);
      if (!job) throw new Error(`no job ${jobId}`);
      return clone(JobSchema, job);
    },
  };

  const enter = async (method: BuildsMethod, req: unknown) => {
    calls.push({ method, req });
    for (let turns = fake.jitter(); turns > 0; turns--) await new Promise((r) => setImmediate(r));
    const err = failures.get(method)?.shift();
    if (err) throw err;
  };
  const find = (jobId: string | undefined): Job => {
    const job = jobs.get(jobId ?? "");
    if (!job) throw notFoundJob();
    return job;
  };
  const save = (job: Job): Job => {
    control.put(job, true);
    return clone(JobSchema, job);
  };

  const client: BuildsClient = {
    async getJob(req) {
      await enter("getJob", req);
      return create(GetJobResponseSchema, { job: clone(JobSchema, find(req.jobId)) });
    },
    async assignJob(req) {
      await enter("assignJob", req);
      const job = find(req.jobId);
      if (job.type !== "script")
        throw new ConnectError(`a ${job.type} job cannot be assigned`, Code.FailedPrecondition);
      if (job.state !== "scheduled") throw refusal(job, "assigned to an agent", `a job in state "scheduled"`);
      const next = clone(JobSchema, job);
      next.state = "assigned";
      next.agent = create(JobAgentSchema, req.agent ?? {});
      return create(AssignJobResponseSchema, { job: save(next) });
    },
    async acceptJob(req) {
      await enter("acceptJob", req);
      const job = find(req.jobId);
      if (job.agent?.id !== req.agentId) {
        throw new ConnectError("The job is not assigned to this agent", Code.FailedPrecondition);
      }
      const env = { BUILDKITE_JOB_ID: job.id, BUILDKITE_BUILD_ID: job.buildId };
      if (job.state === "accepted") return create(AcceptJobResponseSchema, { job: clone(JobSchema, job), env });
      if (job.state !== "assigned") throw refusal(job, "accepted", `a job in state "assigned"`);
      const next = clone(JobSchema, job);
      next.state = "accepted";
      return create(AcceptJobResponseSchema, { job: save(next), env });
    },
    async transitionJob(req) {
      await enter("transitionJob", req);
      const job = find(req.jobId);
      if (req.agentId && job.agent?.id !== req.agentId) {
        throw new ConnectError("The job is not assigned to this agent", Code.FailedPrecondition);
      }
      const next = clone(JobSchema, job);
      switch (req.event) {
        case JobEventType.UNASSIGN:
          if (job.state !== "assigned") throw refusal(job, "unassigned", `a job in state "assigned"`);
          next.state = "scheduled";
          next.agent = undefined;
          break;
        case JobEventType.START:
          if (job.state !== "accepted") throw refusal(job, "started", `a job in state "accepted"`);
          next.state = "running";
          break;
        case JobEventType.FINISH: {
          const exitStatus = req.exitStatus ?? 0;
          const to: Record<string, string> = {
            running: exitStatus === 0 ? "passed" : "failed",
            canceling: "canceled",
            timing_out: "timed_out",
          };
          const state = to[job.state];
          if (!state) throw refusal(job, "finished", `a job in state "running", "canceling" or "timing_out"`);
          Object.assign(next, {
            state,
            exitStatus,
            signal: req.signal ?? "",
            signalReason: req.signalReason ?? "",
            finishedAt: req.at ? create(TimestampSchema, req.at) : timestampFromDate(new Date()),
          });
          break;
        }
        case JobEventType.CANCEL:
          if (["pending", "waiting", "scheduled", "assigned", "blocked", "limiting", "limited"].includes(job.state)) {
            next.state = "canceled";
          } else if (job.state === "accepted" || job.state === "running") {
            next.state = "canceling";
          } else {
            throw refusal(job, "canceled", "an unfinished job");
          }
          break;
        default:
          throw new ConnectError("event is required", Code.InvalidArgument);
      }
      return create(TransitionJobResponseSchema, { job: save(next) });
    },
    async listDispatchableJobs(req) {
      await enter("listDispatchableJobs", req);
      const limit = req.limit && req.limit > 0 ? req.limit : 1000;
      const jobsList =
        fake.listOverride ??
        [...jobs.values()]
          .filter((j) => j.state === "scheduled" && j.type === "script")
          .map((j) =>
            create(DispatchableJobSchema, {
              id: j.id,
              organizationId: j.organizationId,
              clusterId: j.clusterId,
              agentQueryRules: j.agentQueryRules,
              priority: j.priority,
              ...(j.runnableAt ? { runnableAt: j.runnableAt } : {}),
            }),
          );
      return create(ListDispatchableJobsResponseSchema, { jobs: jobsList.slice(0, limit) });
    },
    async countQueueJobs(req) {
      await enter("countQueueJobs", req);
      return create(CountQueueJobsResponseSchema, { queues: queueCounts.get(req.organizationId ?? "") ?? [] });
    },
  };
  // The tests set `jitter` and `listOverride` on the returned object: the methods read them from there.
  const fake = Object.assign(client, control);
  return fake;
}

export type FakeBuilds = ReturnType<typeof createFakeBuilds>;

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

/**
 * One agents service (and, with `replica()`, more processes over the same stores) with an organization, a cluster
 * and a registration token of that cluster.
 */
export async function setup() {
  const agentsRepo = createMemoryAgentRepository();
  const clustersRepo = createMemoryClusterRepository();
  const builds = createFakeBuilds();
  const events = createEventRecorder();
  const clock = {
    t: T0,
    now: () => new Date(clock.t),
    advance(ms: number) {
      clock.t += ms;
    },
  };

  /** One process of the agents service; job changes reach each process's hints as main.ts wires them. */
  const replica = () => {
    const domain = createAgentsDomain({
      clusters: clustersRepo,
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
   * A scheduled script job of the home organization and cluster, announced to the hints (unless `announce` is
   * false); `runnableAt` is milliseconds after T0.
   */
  const job = (
    init: {
      id?: string;
      orgId?: string;
      clusterId?: string;
      rules?: string[];
      priority?: number;
      runnableAt?: number;
      type?: string;
    } = {},
    announce = true,
  ): string => {
    const id = init.id ?? newId();
    builds.put(
      create(JobSchema, {
        id,
        buildId: `build-of-${id}`,
        type: init.type ?? "script",
        state: "scheduled",
        organizationId: init.orgId ?? home.orgId,
        clusterId: init.clusterId ?? home.clusterId,
        agentQueryRules: init.rules ?? [],
        priority: init.priority ?? 0,
        runnableAt: timestampFromDate(new Date(T0 + (init.runnableAt ?? 0))),
      }),
      announce,
    );
    return id;
  };

  /** A new job that an agent is offered on its ping and accepts; returns the job id and token. */
  const takeJob = async (agentId: string) => {
    const jobId = job({ priority: 1000 });
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
    job,
    takeJob,
    authenticate,
  };
}

export type World = Awaited<ReturnType<typeof setup>>;

/** The job's state and agent in the fake builds service. */
export const held = (builds: FakeBuilds, jobId: string) => {
  const job = builds.job(jobId);
  return { state: job.state, agent: job.agent?.id ?? "" };
};

/** Starts an accepted job, as the agent does through the gateway before it runs the command. */
export async function start(s: World, jobId: string, agentId: string) {
  await s.builds.transitionJob({ jobId, event: JobEventType.START, agentId });
}
