import { CredentialKind, type QueueMetrics } from "@conveyor/proto/agents";
import { isoTime } from "@conveyor/runtime";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { Int, NullableTimestamp, Str } from "../render/schemas.js";
import { responses, typed } from "../route-declarations/declare.js";
import { MAX_INT32, text } from "../route-declarations/params.js";
import type { AgentApiDeps } from "./agent-api.js";
import { credentialOf, KIND_NAMES } from "./agent-credentials.js";

/** The body of `POST /v3/register` (docs/compatibility.md#agent-endpoints); unknown keys are ignored, as the agent adds some. */
const RegisterBody = Type.Object({
  name: Type.Optional(text(255)),
  hostname: Type.Optional(text(255)),
  // The agent sends the whole of /etc/os-release here.
  os: Type.Optional(text(4096)),
  arch: Type.Optional(text(255)),
  script_eval_enabled: Type.Optional(Type.Boolean()),
  ignore_in_dispatches: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Type.Union([Type.Integer({ minimum: -MAX_INT32 - 1, maximum: MAX_INT32 }), Type.Null()])),
  version: Type.Optional(text(255)),
  build: Type.Optional(text(255)),
  meta_data: Type.Optional(Type.Array(text(1024), { maxItems: 100, description: "the agent's tags, k=v" })),
  pid: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_INT32 })),
  machine_id: Type.Optional(text(255)),
  features: Type.Optional(Type.Array(text(255), { maxItems: 100 })),
});

const RegisteredSchema = Type.Object({
  id: Str,
  name: Str,
  access_token: Str,
  endpoint: Str,
  request_headers: Type.Record(Type.String(), Type.String()),
  ping_interval: Int,
  job_status_interval: Int,
  heartbeat_interval: Int,
  meta_data: Type.Array(Str),
});
const HeartbeatBody = Type.Object({ sent_at: Type.Optional(text(64)) });
const HeartbeatSchema = Type.Object({ sent_at: Type.Union([Str, Type.Null()]), received_at: NullableTimestamp });
const PingSchema = Type.Object({
  action: Str,
  message: Type.Optional(Str),
  job: Type.Optional(Type.Object({ id: Str })),
});
const TokenSchema = Type.Object({
  uuid: Str,
  description: Str,
  token_type: Str,
  organization_slug: Str,
  organization_uuid: Str,
  cluster_uuid: Str,
  cluster_name: Str,
  organization_queue_uuid: Str,
  organization_queue_key: Str,
});
const agentCounts = { idle: Int, busy: Int, total: Int };
const jobCounts = { scheduled: Int, running: Int, waiting: Int, total: Int };
/** The spec's Agent metrics; `cluster` when the registration token is a cluster's. */
const MetricsSchema = Type.Object({
  agents: Type.Object({ ...agentCounts, queues: Type.Record(Type.String(), Type.Object(agentCounts)) }),
  jobs: Type.Object({ ...jobCounts, queues: Type.Record(Type.String(), Type.Object(jobCounts)) }),
  organization: Type.Object({ slug: Str }),
  cluster: Type.Optional(Type.Object({ name: Str })),
});
/** One queue's metrics (`/v3/metrics/queue`): the shape of the whole without `queues`. */
const QueueMetricsSchema = Type.Object({
  agents: Type.Object(agentCounts),
  jobs: Type.Object(jobCounts),
  organization: Type.Object({ slug: Str }),
  cluster: Type.Optional(Type.Object({ name: Str })),
});
const QueueQuery = Type.Object({ name: text(255, { minLength: 1, description: "the queue" }) });
/**
 * How often autoscalers should poll the metrics, in seconds (`Buildkite-Agent-Metrics-Poll-Duration`, which
 * buildkite-agent-metrics and Buildkite's agent scaler read): the numbers are kept a second, and change no faster
 * than agents ping.
 */
export const METRICS_POLL_DURATION_S = 5;
const POLL_HEADER = "buildkite-agent-metrics-poll-duration";
/** The answer of calls whose body the agent ignores. */
export const Empty = Type.Object({});
const tags = ["agent"];

/** Agents and jobs of a queue (or all), as buildkite-agent-metrics decodes them. */
function countAgents(m: QueueMetrics | undefined) {
  return { idle: m?.agentsIdle ?? 0, busy: m?.agentsBusy ?? 0, total: m?.agentsTotal ?? 0 };
}
function countJobs(m: QueueMetrics | undefined) {
  return {
    scheduled: m?.jobsScheduled ?? 0,
    running: m?.jobsRunning ?? 0,
    waiting: m?.jobsWaiting ?? 0,
    total: m?.jobsTotal ?? 0,
  };
}

/**
 * The agent's own routes (docs/compatibility.md#an-agents-life, #agent-endpoints): register with a registration token; connect, heartbeat,
 * ping and disconnect with its access token; `GET token` with any credential; and the metrics endpoint of buildkite-agent-metrics.
 */
export function agentRoutes(app: FastifyInstance, deps: AgentApiDeps): void {
  const { clients } = deps;
  const agent = { credential: ["agent"] } as const;
  const route = typed(app);

  /**
   * The queue a credential works in: an agent's (its `queue` tag, "default" without one), a job's (the queue its
   * agent rules name); none for a registration token, which any queue's agents use.
   */
  const queueOf = async (credential: ReturnType<typeof credentialOf>): Promise<string> => {
    if (credential.kind === CredentialKind.JOB)
      return (await clients.builds.getJob({ jobId: credential.jobId })).job?.queue ?? "";
    if (credential.kind === CredentialKind.AGENT)
      return (
        (await clients.agents.getAgent({ organizationId: credential.organizationId, id: credential.agentId })).agent
          ?.queue ?? ""
      );
    return "";
  };

  route.post(
    "/v3/register",
    {
      config: { credential: ["registration"] },
      schema: {
        operationId: "agentRegister",
        summary: "Register an agent with a registration token: its access token and intervals",
        tags,
        body: RegisterBody,
        response: responses(200, RegisteredSchema),
      },
    },
    async (request) => {
      const body = request.body ?? {};
      const res = await clients.agents.registerAgent({
        tokenId: credentialOf(request).tokenId,
        name: body.name ?? "",
        hostname: body.hostname ?? "",
        os: body.os ?? "",
        arch: body.arch ?? "",
        version: body.version ?? "",
        build: body.build ?? "",
        metaData: body.meta_data ?? [],
        ...(typeof body.priority === "number" ? { priority: body.priority } : {}),
        pid: body.pid ?? 0,
        machineId: body.machine_id ?? "",
        scriptEvalEnabled: body.script_eval_enabled ?? true,
        ignoreInDispatches: body.ignore_in_dispatches ?? false,
        features: body.features ?? [],
        userAgent: request.headers["user-agent"] ?? "",
        ipAddress: request.ip,
      });
      return {
        id: res.agent?.id ?? "",
        name: res.agent?.name ?? "",
        access_token: res.accessToken,
        // Empty: the agent keeps the endpoint it registered with (and tells jobs that one).
        endpoint: "",
        request_headers: {},
        ping_interval: res.pingInterval,
        job_status_interval: res.jobStatusInterval,
        heartbeat_interval: res.heartbeatInterval,
        meta_data: res.agent?.metaData ?? [],
      };
    },
  );

  route.post(
    "/v3/connect",
    {
      config: agent,
      schema: {
        operationId: "agentConnect",
        summary: "Mark the agent connected",
        tags,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      await clients.agents.connectAgent({
        agentId: credentialOf(request).agentId,
        userAgent: request.headers["user-agent"] ?? "",
        ipAddress: request.ip,
      });
      return {};
    },
  );

  route.post(
    "/v3/disconnect",
    {
      config: agent,
      schema: {
        operationId: "agentDisconnect",
        summary: "Mark the agent disconnected",
        tags,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      await clients.agents.disconnectAgent({ agentId: credentialOf(request).agentId });
      return {};
    },
  );

  route.post(
    "/v3/heartbeat",
    {
      config: agent,
      schema: {
        operationId: "agentHeartbeat",
        summary: "The agent is alive",
        tags,
        body: HeartbeatBody,
        response: responses(200, HeartbeatSchema),
      },
    },
    async (request) => {
      const res = await clients.agents.heartbeatAgent({ agentId: credentialOf(request).agentId });
      return { sent_at: request.body?.sent_at ?? null, received_at: isoTime(res.receivedAt) };
    },
  );

  route.get(
    "/v3/ping",
    {
      config: agent,
      schema: {
        operationId: "agentPing",
        summary: "What the agent should do next: a job to accept, pause, disconnect or nothing",
        tags,
        response: responses(200, PingSchema),
      },
    },
    async (request) => {
      const res = await clients.agents.pingAgent({ agentId: credentialOf(request).agentId });
      return {
        action: res.action,
        ...(res.message ? { message: res.message } : {}),
        ...(res.jobId ? { job: { id: res.jobId } } : {}),
      };
    },
  );

  route.get(
    "/v3/token",
    {
      config: { credential: ["registration", "agent", "job"] },
      schema: {
        operationId: "agentToken",
        summary: "What the calling credential is",
        tags,
        response: responses(200, TokenSchema),
      },
    },
    async (request) => {
      const credential = credentialOf(request);
      const [organization, cluster, queue] = await Promise.all([
        deps.organizations.get(credential.organizationId),
        credential.clusterId
          ? clients.agents
              .getCluster({ organizationId: credential.organizationId, id: credential.clusterId })
              .then((r) => r.cluster)
          : undefined,
        queueOf(credential),
      ]);
      // The queue object of that key in the credential's cluster (docs/compatibility.md#clusters-and-queues).
      const queueUuid =
        credential.clusterId && queue
          ? ((
              await clients.agents.listClusterQueues({
                organizationId: credential.organizationId,
                clusterId: credential.clusterId,
              })
            ).queues.find((q) => q.key === queue)?.id ?? "")
          : "";
      return {
        uuid: credential.kind === CredentialKind.JOB ? credential.jobId : credential.tokenId,
        description: "",
        token_type: KIND_NAMES[credential.kind] ?? "",
        organization_slug: organization?.slug ?? "",
        organization_uuid: credential.organizationId,
        cluster_uuid: credential.clusterId,
        cluster_name: cluster?.name ?? "",
        // Empty where the cluster has no queue of that key (or the credential has no cluster).
        organization_queue_uuid: queueUuid,
        organization_queue_key: queue,
      };
    },
  );

  /** A registration token's metrics (its cluster's, for a cluster's token), its organization's slug and cluster. */
  const metricsOf = async (request: FastifyRequest) => {
    const credential = credentialOf(request);
    const [metrics, organization, cluster] = await Promise.all([
      clients.agents.getMetrics({ organizationId: credential.organizationId, clusterId: credential.clusterId }),
      deps.organizations.get(credential.organizationId),
      credential.clusterId
        ? clients.agents
            .getCluster({ organizationId: credential.organizationId, id: credential.clusterId })
            .then((r) => r.cluster)
        : undefined,
    ]);
    return {
      metrics,
      organization: { slug: organization?.slug ?? "" },
      ...(credential.clusterId ? { cluster: { name: cluster?.name ?? "" } } : {}),
    };
  };

  route.get(
    "/v3/metrics",
    {
      config: { credential: ["registration"] },
      schema: {
        operationId: "agentMetrics",
        summary: "Idle and busy agents and queued jobs of the registration token's organization",
        tags,
        response: responses(200, MetricsSchema),
      },
    },
    async (request, reply) => {
      const { metrics, ...about } = await metricsOf(request);
      const queues = Object.entries(metrics.queues);
      reply.header(POLL_HEADER, String(METRICS_POLL_DURATION_S));
      return {
        agents: {
          ...countAgents(metrics.overall),
          queues: Object.fromEntries(queues.map(([name, m]) => [name, countAgents(m)])),
        },
        jobs: {
          ...countJobs(metrics.overall),
          queues: Object.fromEntries(queues.map(([name, m]) => [name, countJobs(m)])),
        },
        ...about,
      };
    },
  );

  route.get(
    "/v3/metrics/queue",
    {
      config: { credential: ["registration"] },
      schema: {
        operationId: "agentQueueMetrics",
        summary: "Idle and busy agents and queued jobs of one queue (buildkite-agent-metrics -queue)",
        tags,
        querystring: QueueQuery,
        response: responses(200, QueueMetricsSchema),
      },
    },
    async (request, reply) => {
      const { metrics, ...about } = await metricsOf(request);
      // A queue with no agents and no unfinished jobs has none of either.
      const queue = metrics.queues[request.query.name];
      reply.header(POLL_HEADER, String(METRICS_POLL_DURATION_S));
      return { agents: countAgents(queue), jobs: countJobs(queue), ...about };
    },
  );
}
