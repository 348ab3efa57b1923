import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { type BuildsService, type JobAgent, JobEventType } from "@conveyor/proto/builds";
import { invalidFields, notFound, toTimestamp } from "@conveyor/runtime";
import type { BuildsContext } from "../builds-context.js";
import type { AgentSnapshot } from "../domain/job.js";
import type { JobEvent } from "../domain/state-machine.js";
import { COUNTED_JOB_STATES } from "../domain/state-sets.js";
import type { JobState } from "../domain/types.js";
import type { JobLogs } from "../jobs/job-logs.js";
import type { JobTransitions } from "../jobs/job-transitions.js";
import type { createBuildMetaData } from "../meta-data/build-meta-data.js";
import { buildMessage, jobMessage } from "./build-message.js";
import type { JobActionRpcs } from "./job-actions-rpc.js";
import type { StepRpcs } from "./steps-rpc.js";

/** One table from the proto's job events to the domain's. */
const EVENT_TYPES: Partial<Record<JobEventType, Exclude<JobEvent["type"], "finish">>> = {
  [JobEventType.ASSIGN]: "assign",
  [JobEventType.ACCEPT]: "accept",
  [JobEventType.START]: "start",
  [JobEventType.CANCEL]: "cancel",
  [JobEventType.CANCELED]: "canceled",
  [JobEventType.TIMEOUT]: "timeout",
  [JobEventType.TIMED_OUT]: "timed_out",
  [JobEventType.EXPIRE]: "expire",
  [JobEventType.UNBLOCK]: "unblock",
  [JobEventType.SKIP]: "skip",
  [JobEventType.UNASSIGN]: "unassign",
};

/** The most dispatchable jobs one call returns. */
const MAX_DISPATCHABLE = 1000;

/** Job states the metrics count, by what the job waits for (buildkite-agent-metrics' three numbers). */
const METRIC_STATES = COUNTED_JOB_STATES;

function agentSnapshot(agent: JobAgent | undefined): AgentSnapshot | undefined {
  if (!agent || agent.id === "") return undefined;
  return {
    id: agent.id,
    name: agent.name,
    hostname: agent.hostname,
    ipAddress: agent.ipAddress,
    userAgent: agent.userAgent,
    connectionState: agent.connectionState || "connected",
    createdAt: agent.createdAt ? timestampDate(agent.createdAt) : null,
    metaData: agent.metaData,
  };
}

type JobRpcs = Omit<
  ServiceImpl<typeof BuildsService>,
  | "createBuild"
  | "getBuild"
  | "listBuilds"
  | "readBuilds"
  | "cancelBuild"
  | "rebuildBuild"
  | "receiveWebhook"
  | keyof JobActionRpcs
  | keyof StepRpcs
>;

/** The RPCs on jobs: transitions, dispatch, logs and build meta-data. */
export function createJobRpcs(
  ctx: BuildsContext,
  parts: { transitions: JobTransitions; logs: JobLogs; metaData: ReturnType<typeof createBuildMetaData> },
): JobRpcs {
  const { repo } = ctx;
  const { transitions, logs, metaData } = parts;

  return {
    async transitionJob(req) {
      const at = req.at ? timestampDate(req.at) : undefined;
      const agentId = req.agentId || undefined;
      const event: JobEvent | undefined =
        req.event === JobEventType.FINISH
          ? { type: "finish", exitStatus: req.exitStatus }
          : EVENT_TYPES[req.event] && ({ type: EVENT_TYPES[req.event] } as JobEvent);
      if (!event) throw invalidFields([{ field: "event", code: "is required" }]);
      const result = await transitions.apply(req.jobId, event, {
        ...(at ? { at } : {}),
        ...(agentId ? { agentId } : {}),
        ...(event.type === "assign" ? { agent: agentSnapshot(req.agent) } : {}),
        signal: req.signal,
        signalReason: req.signalReason,
      });
      return { job: jobMessage(result.job), build: buildMessage(result.build, result.jobs) };
    },

    async getJob(req) {
      const job = req.jobId === "" ? null : await repo.findJob(req.jobId);
      if (!job) throw notFound("job");
      return { job: jobMessage(job) };
    },

    async listDispatchableJobs(req) {
      const limit = req.limit > 0 ? Math.min(req.limit, MAX_DISPATCHABLE) : MAX_DISPATCHABLE;
      const jobs = await repo.dispatchableJobs(limit);
      return {
        jobs: jobs.map((j) => ({
          id: j.id,
          organizationId: j.organizationId,
          clusterId: j.clusterId ?? "",
          agentQueryRules: j.agentQueryRules,
          priority: j.priority,
          runnableAt: toTimestamp(j.runnableAt),
        })),
      };
    },

    async assignJob(req) {
      const agent = agentSnapshot(req.agent);
      if (!agent) throw invalidFields([{ field: "agent", code: "is required" }]);
      const { job } = await transitions.assign(req.jobId, agent, req.clusterQueueId);
      return { job: jobMessage(job) };
    },

    async acceptJob(req) {
      if (req.agentId === "") throw invalidFields([{ field: "agent_id", code: "is required" }]);
      const { job, env } = await transitions.accept(req.jobId, req.agentId);
      return { job: jobMessage(job), env };
    },

    async appendJobLog(req) {
      await logs.append({
        jobId: req.jobId,
        sequence: req.sequence,
        offset: Number(req.offset),
        size: req.size,
        gzip: req.data,
      });
      return {};
    },

    async setJobHeaderTimes(req) {
      await logs.setHeaderTimes(req.jobId, req.headerTimes);
      return {};
    },

    async *streamJobLog(req) {
      const range = { fromOffset: Number(req.fromOffset), tailBytes: Number(req.tailBytes) };
      for await (const part of logs.stream(req.pipelineId, req.number, req.jobId, range)) {
        if ("info" in part) {
          yield {
            part: {
              case: "info",
              value: { size: BigInt(part.info.size), headerTimes: part.info.headerTimes, deleted: part.info.deleted },
            },
          };
        } else {
          yield { part: { case: "data", value: part.data }, offset: BigInt(part.offset) };
        }
      }
    },

    async deleteJobLog(req) {
      await logs.delete(req.pipelineId, req.number, req.jobId);
      return {};
    },

    async setBuildMetaData(req) {
      await metaData.set(req.buildId, req.items, req.jobId);
      return {};
    },

    async getBuildMetaData(req) {
      return metaData.get(req.buildId, req.key);
    },

    async listBuildMetaDataKeys(req) {
      return { keys: await metaData.keys(req.buildId) };
    },

    async updateJob(req) {
      // REST names the job within its build: no such build is "No build found", a job of another build not found.
      const build = req.pipelineId === "" ? null : await repo.findBuild(req.pipelineId, req.number);
      if (req.pipelineId !== "" && !build) throw notFound("build");
      const job = req.jobId === "" ? null : await repo.findJob(req.jobId);
      if (!job || (build && job.buildId !== build.id)) throw notFound("job");
      let updated = job;
      if (req.priority !== undefined) updated = await transitions.setPriority(req.jobId, req.priority);
      if (req.timeoutInMinutes !== undefined) updated = await transitions.setTimeout(req.jobId, req.timeoutInMinutes);
      return { job: jobMessage(updated) };
    },

    async countQueueJobs(req) {
      if (req.organizationId === "") return { queues: [] };
      const states = Object.values(METRIC_STATES).flat();
      const rows = await repo.countQueueJobs(req.organizationId, states, req.clusterId || undefined);
      const queues = new Map<string, { queue: string; scheduled: number; running: number; waiting: number }>();
      for (const row of rows) {
        const entry = queues.get(row.queue) ?? { queue: row.queue, scheduled: 0, running: 0, waiting: 0 };
        for (const [kind, list] of Object.entries(METRIC_STATES) as Array<[keyof typeof METRIC_STATES, JobState[]]>) {
          if (list.includes(row.state)) entry[kind] += row.count;
        }
        queues.set(row.queue, entry);
      }
      return { queues: [...queues.values()] };
    },
  };
}
