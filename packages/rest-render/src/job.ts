import type { JobState } from "@conveyor/ci-rules";
import type { Job, JobAgent } from "@conveyor/proto/builds";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { Bool, Int, Nullable, NullableInt, NullableStr, NullableTimestamp, Str } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";
import { NullableUserSchema, renderBuildUser } from "./user.js";

/** How much of a job's agent to render: lists carry `{id, url, name}`, single-build responses the whole agent. */
export type JobDetail = "list" | "single";

/** Where a job's links point: the API and web URLs of its build, and the organization it belongs to. */
export interface BuildUrls {
  urls: Urls;
  orgSlug: string;
  /** The build's API URL (…/v2/organizations/{org}/pipelines/{slug}/builds/{number}). */
  api: string;
  /** The build's web URL ({web}/{org}/{slug}/builds/{number}). */
  web: string;
}

/** Job states REST never shows: concurrency-limited jobs read as scheduled (docs/compatibility.md#job-states). */
const REST_JOB_STATE: Partial<Record<JobState, JobState>> = { limiting: "scheduled", limited: "scheduled" };

/** Manual jobs are unblockable while they wait at the block. */
const UNBLOCKABLE_STATES = new Set<string>(["blocked"] satisfies JobState[]);

const orNull = (s: string) => (s === "" ? null : s);

function renderAgent(agent: JobAgent | undefined, build: BuildUrls, detail: JobDetail): JobBody["agent"] {
  if (!agent?.id) return null;
  const summary = {
    id: agent.id,
    url: build.urls.api(`organizations/${build.orgSlug}/agents/${agent.id}`),
    name: agent.name,
  };
  if (detail === "list") return summary;
  return {
    ...summary,
    graphql_id: graphqlId("Agent", agent.id),
    web_url: build.urls.web(`organizations/${build.orgSlug}/agents/${agent.id}`),
    connection_state: agent.connectionState,
    hostname: agent.hostname,
    ip_address: agent.ipAddress,
    user_agent: agent.userAgent,
    creator: null,
    created_at: isoTime(agent.createdAt),
  };
}

const StepSignatureSchema = Type.Object({ algorithm: Str, signed_fields: Type.Array(Str), value: Str });
type StepSignatureBody = Static<typeof StepSignatureSchema>;

/** A signed step's `signature` (docs/security.md#signed-pipelines), from the job's signed step; null when unsigned. */
function signatureOf(signedStepJson: string): StepSignatureBody | null {
  if (signedStepJson === "") return null;
  const { signature } = JSON.parse(signedStepJson) as { signature: StepSignatureBody };
  return { algorithm: signature.algorithm, signed_fields: [...signature.signed_fields], value: signature.value };
}

/** The REST Job object (an element of a build's `jobs`), with the JSON types go-buildkite decodes (docs/compatibility.md#go-buildkite). */
export function renderJob(job: Job, build: BuildUrls, detail: JobDetail): JobBody {
  const jobApi = `${build.api}/jobs/${job.id}`;
  const clusterUrl = job.clusterId ? build.urls.api(`organizations/${build.orgSlug}/clusters/${job.clusterId}`) : null;
  const rendered: JobBody = {
    id: job.id,
    graphql_id: graphqlId("Job", job.id),
    type: job.type,
    name: orNull(job.name),
    label: orNull(job.label),
    step_key: orNull(job.stepKey),
    step: job.stepId ? { id: job.stepId, signature: signatureOf(job.signedStepJson) } : null,
    agent_query_rules: job.agentQueryRules,
    state: REST_JOB_STATE[job.state as JobState] ?? job.state,
    build_url: build.api,
    web_url: `${build.web}#${job.id}`,
    log_url: `${jobApi}/log`,
    raw_log_url: `${jobApi}/log.txt`,
    artifacts_url: `${jobApi}/artifacts`,
    command: job.type === "script" ? job.command : orNull(job.command),
    soft_failed: job.softFailed,
    exit_status: job.exitStatus ?? null,
    signal: orNull(job.signal),
    signal_reason: orNull(job.signalReason),
    artifact_paths: orNull(job.artifactPaths),
    agent: renderAgent(job.agent, build, detail),
    created_at: isoTime(job.createdAt),
    scheduled_at: isoTime(job.scheduledAt),
    runnable_at: isoTime(job.runnableAt),
    started_at: isoTime(job.startedAt),
    finished_at: isoTime(job.finishedAt),
    retried: job.retried,
    retried_in_job_id: orNull(job.retriedInJobId),
    retries_count: job.retriesCount > 0 ? job.retriesCount : null,
    retry_type: orNull(job.retryType),
    retry_source: job.retrySource?.jobId
      ? { job_id: job.retrySource.jobId, retry_type: job.retrySource.retryType }
      : null,
    retried_by: renderBuildUser(job.retriedBy),
    expired_at: job.state === "expired" ? isoTime(job.finishedAt) : null,
    parallel_group_index: job.parallelGroupIndex ?? null,
    parallel_group_total: job.parallelGroupTotal ?? null,
    matrix: Object.keys(job.matrix).length > 0 ? { ...job.matrix } : null,
    priority: { number: job.priority },
    cluster_id: orNull(job.clusterId),
    cluster_url: clusterUrl,
    cluster_queue_id: orNull(job.clusterQueueId),
    cluster_queue_url: clusterUrl && job.clusterQueueId ? `${clusterUrl}/queues/${job.clusterQueueId}` : null,
  };
  if (job.type === "trigger") {
    const child = job.triggeredBuild;
    rendered.triggered_build = child?.id
      ? {
          id: child.id,
          number: child.number,
          url: build.urls.api(`organizations/${build.orgSlug}/pipelines/${child.pipelineSlug}/builds/${child.number}`),
          web_url: build.urls.web(`${build.orgSlug}/${child.pipelineSlug}/builds/${child.number}`),
        }
      : null;
  }
  if (job.type === "manual") {
    rendered.unblocked_at = isoTime(job.unblockedAt);
    rendered.unblocked_by = renderBuildUser(job.unblockedBy);
    rendered.unblockable = UNBLOCKABLE_STATES.has(job.state);
    rendered.unblock_url = `${jobApi}/unblock`;
  }
  return rendered;
}

/** The agent embedded in a job: list responses fill the first three fields, single-build responses all of them. */
const JobAgentSchema = Nullable(
  Type.Object({
    id: Str,
    url: Str,
    name: Str,
    graphql_id: Type.Optional(Str),
    web_url: Type.Optional(Str),
    connection_state: Type.Optional(Str),
    hostname: Type.Optional(Str),
    ip_address: Type.Optional(Str),
    user_agent: Type.Optional(Str),
    creator: Type.Optional(Type.Null()),
    created_at: Type.Optional(NullableTimestamp),
  }),
);

/**
 * The REST Job; manual jobs add `unblocked_at`, `unblocked_by`, `unblockable` and `unblock_url`, trigger jobs
 * `triggered_build`.
 */
export const JobSchema = Type.Object({
  id: Str,
  graphql_id: Str,
  type: Str,
  name: NullableStr,
  label: NullableStr,
  step_key: NullableStr,
  step: Nullable(Type.Object({ id: Str, signature: Nullable(StepSignatureSchema) })),
  agent_query_rules: Type.Array(Str),
  state: Str,
  build_url: Str,
  web_url: Str,
  log_url: Str,
  raw_log_url: Str,
  artifacts_url: Str,
  command: NullableStr,
  soft_failed: Bool,
  exit_status: NullableInt,
  signal: NullableStr,
  signal_reason: NullableStr,
  artifact_paths: NullableStr,
  agent: JobAgentSchema,
  created_at: NullableTimestamp,
  scheduled_at: NullableTimestamp,
  runnable_at: NullableTimestamp,
  started_at: NullableTimestamp,
  finished_at: NullableTimestamp,
  retried: Bool,
  retried_in_job_id: NullableStr,
  retries_count: NullableInt,
  retry_type: NullableStr,
  retry_source: Nullable(Type.Object({ job_id: Str, retry_type: Str })),
  retried_by: NullableUserSchema,
  expired_at: NullableTimestamp,
  parallel_group_index: NullableInt,
  parallel_group_total: NullableInt,
  /** A matrix job's combination, dimension → value ("" for the list form); null for other jobs. */
  matrix: Nullable(Type.Record(Str, Str)),
  priority: Type.Object({ number: Int }),
  cluster_id: NullableStr,
  cluster_url: NullableStr,
  cluster_queue_id: NullableStr,
  cluster_queue_url: NullableStr,
  unblocked_at: Type.Optional(NullableTimestamp),
  unblocked_by: Type.Optional(NullableUserSchema),
  triggered_build: Type.Optional(Nullable(Type.Object({ id: Str, number: Int, url: Str, web_url: Str }))),
  unblockable: Type.Optional(Bool),
  unblock_url: Type.Optional(Str),
});
export type JobBody = Static<typeof JobSchema>;
