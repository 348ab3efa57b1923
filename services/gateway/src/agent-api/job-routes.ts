import { Code, ConnectError } from "@connectrpc/connect";
import { JobEventType } from "@conveyor/proto/builds";
import { toTimestamp } from "@conveyor/runtime";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { Str } from "../render/schemas.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { Id, MAX_INT32, text } from "../route-declarations/params.js";
import type { AgentApiDeps } from "./agent-api.js";
import { credentialOf } from "./agent-credentials.js";
import { AgentJobSchema, renderAgentJob } from "./agent-job.js";
import { Empty } from "./agent-routes.js";

/** A job of the agent API, by id. */
export const AgentJobParams = Type.Object({ id: Id });

const time = text(64, { description: "RFC 3339 time" });
const StartBody = Type.Object({ started_at: Type.Optional(time) });
const FinishBody = Type.Object({
  exit_status: Type.Optional(Type.Union([text(12), Type.Integer()], { description: "the exit status, as a string" })),
  signal: Type.Optional(text(64)),
  signal_reason: Type.Optional(text(64)),
  finished_at: Type.Optional(time),
  chunks_failed_count: Type.Optional(Type.Integer({ minimum: 0 })),
  ignore_agent_in_dispatches: Type.Optional(Type.Boolean()),
});
const HeaderTimesBody = Type.Object({
  header_times: Type.Record(Type.String(), time, { maxProperties: 10_000 }),
});
/** Where a log chunk goes: its 1-based sequence, its offset in the log and its uncompressed size. */
const ChunkQuery = Type.Object({
  sequence: Type.Integer({ minimum: 0, maximum: 999_999_999 }),
  offset: Type.Integer({ minimum: 0, maximum: 999_999_999_999_999 }),
  size: Type.Integer({ minimum: 0, maximum: 999_999_999 }),
});
const UpdateBody = Type.Record(Type.String(), text(1024), { minProperties: 1, maxProperties: 10 });
/** `job promise-failure`: the builds service checks the status's range and the reason's length. */
const PromiseFailureBody = Type.Object({
  exit_status: Type.Integer({ minimum: -MAX_INT32 - 1, maximum: MAX_INT32 }),
  reason: Type.Optional(text(4096)),
});
const tags = ["agent"];
/** When an agent acquiring a job that waits for its dependencies asks again, in seconds. */
const ACQUIRE_RETRY_AFTER_S = 5;
/** The names `buildkite-agent job update` may use for the job's timeout. */
const TIMEOUT_ATTRIBUTES = new Set(["timeout", "timeout_in_minutes"]);

/** A time the agent sent (RFC 3339), or undefined when absent or unreadable. */
function agentTime(value: string | undefined) {
  if (!value) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : toTimestamp(new Date(ms));
}

/** The exit status the agent sends as a string (or, from other clients, a number), as a 32-bit integer. */
function exitStatus(value: string | number | undefined): number {
  const n = typeof value === "number" ? value : value === undefined || value === "" ? Number.NaN : Number(value);
  if (!Number.isInteger(n) || n < -2147483648 || n > 2147483647) {
    throw new HttpError(422, "exit_status must be an integer", {
      message: "Validation Failed",
      errors: [{ field: "exit_status", code: "must be an integer" }],
    });
  }
  return n;
}

/**
 * The job routes of the agent API (docs/compatibility.md#agent-endpoints, #logs, #cancellation-and-timeouts): accept with the agent's access token; then,
 * with the job token (or the access token of the agent holding the job), start, log chunks, header times, state
 * polls and finish.
 */
export function jobRoutes(app: FastifyInstance, deps: AgentApiDeps): void {
  const { clients, jobAccess } = deps;
  const job = { credential: ["job", "agent"] } as const;
  const route = typed(app);

  route.put(
    "/v3/jobs/:id/accept",
    {
      config: { credential: ["agent"] },
      schema: {
        operationId: "agentAcceptJob",
        summary: "Accept the job a ping offered: the job with its env and token",
        tags,
        params: AgentJobParams,
        response: responses(200, AgentJobSchema),
      },
    },
    async (request) => {
      // A job not offered to this agent is not found, as one that does not exist: the builds service answers an
      // accept of another agent's job NotFound, so that no agent, of any organization, learns that the job exists.
      const res = await clients.agents.acceptJob({ agentId: credentialOf(request).agentId, jobId: request.params.id });
      if (!res.job) throw new HttpError(404, "No job found");
      return renderAgentJob(res.job, res.env, res.jobToken, { urls: deps.urls, logs: deps.logs });
    },
  );

  // `buildkite-agent start --acquire-job <id>` (docs/compatibility.md#steps-from-inside-a-job): the agent takes that
  // job at once; a job waiting for its dependencies is 423 with Retry-After, which the agent waits and asks again on.
  route.put(
    "/v3/jobs/:id/acquire",
    {
      config: { credential: ["agent"] },
      schema: {
        operationId: "agentAcquireJob",
        summary: "Take a named job at once (--acquire-job): the job with its env and token",
        tags,
        params: AgentJobParams,
        response: responses(200, AgentJobSchema),
      },
    },
    async (request, reply) => {
      const res = await clients.agents.acquireJob({ agentId: credentialOf(request).agentId, jobId: request.params.id });
      if (res.locked) {
        reply.header("retry-after", String(ACQUIRE_RETRY_AFTER_S));
        throw new HttpError(423, "The job is waiting for its dependencies: ask again later");
      }
      if (!res.job) throw new HttpError(404, "No job found");
      return renderAgentJob(res.job, res.env, res.jobToken, { urls: deps.urls, logs: deps.logs });
    },
  );

  route.put(
    "/v3/jobs/:id/start",
    {
      config: job,
      schema: {
        operationId: "agentStartJob",
        summary: "The job's process started",
        tags,
        params: AgentJobParams,
        body: StartBody,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      const held = await jobAccess.job(request, request.params.id);
      const at = agentTime(request.body?.started_at);
      await clients.builds.transitionJob({
        jobId: held.jobId,
        event: JobEventType.START,
        agentId: held.agentId,
        ...(at ? { at } : {}),
      });
      return {};
    },
  );

  route.post(
    "/v3/jobs/:id/chunks",
    {
      config: job,
      schema: {
        operationId: "agentLogChunk",
        summary: "A chunk of the job's log: its gzip-compressed bytes as the body",
        description: "The body is raw gzip (`Content-Type: text/plain`, `Content-Encoding: gzip`), not JSON.",
        tags,
        consumes: ["text/plain", "application/octet-stream"],
        params: AgentJobParams,
        querystring: ChunkQuery,
        response: responses(201, Empty),
      },
    },
    async (request, reply) => {
      const held = await jobAccess.job(request, request.params.id);
      if (!Buffer.isBuffer(request.body as unknown))
        throw new HttpError(400, "Send the chunk as the gzip-compressed body");
      await clients.builds.appendJobLog({
        jobId: held.jobId,
        sequence: Number(request.query.sequence),
        offset: BigInt(request.query.offset),
        size: Number(request.query.size),
        data: request.body as Buffer,
      });
      return reply.status(201).send({});
    },
  );

  route.post(
    "/v3/jobs/:id/header_times",
    {
      config: job,
      schema: {
        operationId: "agentHeaderTimes",
        summary: "When the log's section headers were printed",
        tags,
        params: AgentJobParams,
        body: HeaderTimesBody,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      const held = await jobAccess.job(request, request.params.id);
      await clients.builds.setJobHeaderTimes({ jobId: held.jobId, headerTimes: request.body.header_times });
      return {};
    },
  );

  route.get(
    "/v3/jobs/:id",
    {
      config: job,
      schema: {
        operationId: "agentJobState",
        summary: "The job's state, polled for cancellation",
        tags,
        params: AgentJobParams,
        response: responses(200, Type.Object({ id: Str, state: Str })),
      },
    },
    async (request) => {
      const held = await jobAccess.job(request, request.params.id);
      const res = await clients.builds.getJob({ jobId: held.jobId });
      return { id: held.jobId, state: res.job?.state ?? "" };
    },
  );

  // `buildkite-agent job update <attribute> <value>`: the timeout is the one attribute that may change.
  route.put(
    "/v3/jobs/:id",
    {
      config: job,
      schema: {
        operationId: "agentUpdateJob",
        summary: "Change the job's timeout (buildkite-agent job update)",
        tags,
        params: AgentJobParams,
        body: UpdateBody,
        response: responses(200, Type.Object({ id: Str })),
      },
    },
    async (request) => {
      const held = await jobAccess.job(request, request.params.id);
      const problems = Object.keys(request.body)
        .filter((name) => !TIMEOUT_ATTRIBUTES.has(name))
        .map((name) => ({ field: name.slice(0, 100), code: "can't be updated (only timeout_in_minutes can)" }));
      const raw = request.body.timeout_in_minutes ?? request.body.timeout;
      const minutes = raw === undefined ? undefined : Number(raw.trim());
      if (minutes !== undefined && !Number.isInteger(minutes))
        problems.push({ field: "timeout_in_minutes", code: "must be a whole number of minutes" });
      if (problems.length > 0)
        throw new HttpError(422, "Validation Failed", { message: "Validation Failed", errors: problems });
      await clients.builds.updateJob({
        jobId: held.jobId,
        ...(minutes === undefined ? {} : { timeoutInMinutes: minutes }),
      });
      return { id: held.jobId };
    },
  );

  // `buildkite-agent job promise-failure` (docs/compatibility.md#steps-from-inside-a-job): 204; a different promise
  // already made is 409 and a job no longer running 422, which the agent reports as such.
  route.put(
    "/v3/jobs/:id/promise_failure",
    {
      config: job,
      schema: {
        operationId: "agentPromiseFailure",
        summary: "Promise the job will fail with an exit status: its build fails from now on",
        tags,
        params: AgentJobParams,
        body: PromiseFailureBody,
        response: noContent,
      },
    },
    async (request, reply) => {
      const held = await jobAccess.job(request, request.params.id);
      try {
        await clients.builds.promiseJobFailure({
          jobId: held.jobId,
          exitStatus: request.body.exit_status,
          reason: request.body.reason ?? "",
        });
      } catch (err) {
        const e = ConnectError.from(err);
        if (e.code === Code.AlreadyExists) throw new HttpError(409, e.rawMessage);
        throw err;
      }
      return reply.status(204).send();
    },
  );

  route.put(
    "/v3/jobs/:id/finish",
    {
      config: job,
      schema: {
        operationId: "agentFinishJob",
        summary: "The job's process ended: its exit status and signal",
        tags,
        params: AgentJobParams,
        body: FinishBody,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      const held = await jobAccess.job(request, request.params.id);
      const body = request.body ?? {};
      const at = agentTime(body.finished_at);
      await clients.agents.finishJob({
        agentId: held.agentId,
        jobId: held.jobId,
        exitStatus: exitStatus(body.exit_status),
        signal: body.signal ?? "",
        signalReason: body.signal_reason ?? "",
        ...(at ? { finishedAt: at } : {}),
      });
      return {};
    },
  );
}
