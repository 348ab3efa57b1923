import type { Job, JobAgent } from "@conveyor/proto/builds";
import { isoTime } from "@conveyor/runtime";
import { arrayOf, bool, nullableStr, nullableTimestamp, object, str } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";

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

/** Job states REST never shows: concurrency-limited jobs read as scheduled (buildkite-compat.md B2). */
const REST_JOB_STATE: Record<string, string> = { limiting: "scheduled", limited: "scheduled" };

/** Manual jobs are unblockable while they wait at the block. */
const UNBLOCKABLE_STATES = new Set(["blocked"]);

const orNull = (s: string) => (s === "" ? null : s);

function renderAgent(agent: JobAgent | undefined, build: BuildUrls, detail: JobDetail) {
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

/** The REST Job object (an element of a build's `jobs`), with §D's JSON types. */
export function renderJob(job: Job, build: BuildUrls, detail: JobDetail) {
  const jobApi = `${build.api}/jobs/${job.id}`;
  const clusterUrl = job.clusterId ? build.urls.api(`organizations/${build.orgSlug}/clusters/${job.clusterId}`) : null;
  const rendered: Record<string, unknown> = {
    id: job.id,
    graphql_id: graphqlId("Job", job.id),
    type: job.type,
    name: orNull(job.name),
    label: orNull(job.label),
    step_key: orNull(job.stepKey),
    step: job.stepId ? { id: job.stepId, signature: null } : null,
    agent_query_rules: job.agentQueryRules,
    state: REST_JOB_STATE[job.state] ?? job.state,
    build_url: build.api,
    web_url: `${build.web}#${job.id}`,
    log_url: `${jobApi}/log`,
    raw_log_url: `${jobApi}/log.txt`,
    artifacts_url: `${jobApi}/artifacts`,
    command: job.type === "script" ? job.command : orNull(job.command),
    soft_failed: job.softFailed,
    exit_status: job.exitStatus ?? null,
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
    parallel_group_index: job.parallelGroupIndex ?? null,
    parallel_group_total: job.parallelGroupTotal ?? null,
    matrix: null,
    priority: { number: job.priority },
    cluster_id: orNull(job.clusterId),
    cluster_url: clusterUrl,
    cluster_queue_id: orNull(job.clusterQueueId),
    cluster_queue_url: clusterUrl && job.clusterQueueId ? `${clusterUrl}/queues/${job.clusterQueueId}` : null,
  };
  if (job.type === "manual") {
    rendered.unblocked_at = isoTime(job.unblockedAt);
    rendered.unblockable = UNBLOCKABLE_STATES.has(job.state);
    rendered.unblock_url = `${jobApi}/unblock`;
  }
  return rendered;
}

const nullableInt = { type: ["integer", "null"] } as const;

/** The agent embedded in a job: list responses fill the first three fields, single-build responses all of them. */
const jobAgentSchema = {
  type: ["object", "null"],
  properties: {
    id: str,
    url: str,
    name: str,
    graphql_id: str,
    web_url: str,
    connection_state: str,
    hostname: str,
    ip_address: str,
    user_agent: str,
    creator: { type: "null" },
    created_at: nullableTimestamp,
  },
  required: ["id", "url", "name"],
} as const;

const jobProperties = {
  id: str,
  graphql_id: str,
  type: str,
  name: nullableStr,
  label: nullableStr,
  step_key: nullableStr,
  step: { type: ["object", "null"], properties: { id: str, signature: { type: "null" } }, required: ["id"] },
  agent_query_rules: arrayOf(str),
  state: str,
  build_url: str,
  web_url: str,
  log_url: str,
  raw_log_url: str,
  artifacts_url: str,
  command: nullableStr,
  soft_failed: bool,
  exit_status: nullableInt,
  artifact_paths: nullableStr,
  agent: jobAgentSchema,
  created_at: nullableTimestamp,
  scheduled_at: nullableTimestamp,
  runnable_at: nullableTimestamp,
  started_at: nullableTimestamp,
  finished_at: nullableTimestamp,
  retried: bool,
  retried_in_job_id: nullableStr,
  retries_count: nullableInt,
  retry_type: nullableStr,
  parallel_group_index: nullableInt,
  parallel_group_total: nullableInt,
  matrix: { type: "null" },
  priority: object({ number: { type: "integer" } }),
  cluster_id: nullableStr,
  cluster_url: nullableStr,
  cluster_queue_id: nullableStr,
  cluster_queue_url: nullableStr,
};

/** The REST Job; manual jobs add `unblocked_at`, `unblockable` and `unblock_url`. */
export const jobSchema = {
  type: "object",
  properties: {
    ...jobProperties,
    unblocked_at: nullableTimestamp,
    unblockable: bool,
    unblock_url: str,
  },
  required: Object.keys(jobProperties),
} as const;
