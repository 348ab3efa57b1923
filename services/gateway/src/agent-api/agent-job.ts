import type { Job } from "@conveyor/proto/builds";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@fastify/type-provider-typebox";
import type { Urls } from "../render/urls.js";

/** What the gateway tells agents about logs. */
export interface LogSettings {
  /** The largest log chunk an agent sends (uncompressed); must be at least 1 (docs/compatibility.md#the-job-object). */
  chunkBytes: number;
  /** The longest log kept; the agent stops sending past it. */
  maxLogBytes: number;
}

/**
 * The job object of the agent API (docs/compatibility.md#the-job-object), as accept returns it: every env value a string,
 * `chunks_max_size_bytes` positive, exit status and signals left out, and the job token the agent uses from now on.
 */
export function renderAgentJob(
  job: Job,
  env: Record<string, string>,
  token: string,
  opts: { urls: Urls; logs: LogSettings },
): AgentJobBody {
  const org = env.BUILDKITE_ORGANIZATION_SLUG ?? "";
  const pipeline = env.BUILDKITE_PIPELINE_SLUG ?? "";
  return {
    id: job.id,
    endpoint: "",
    state: job.state,
    env: { ...env, BUILDKITE_BUILD_URL: opts.urls.web(`${org}/${pipeline}/builds/${job.buildNumber}`) },
    chunks_max_size_bytes: opts.logs.chunkBytes,
    log_max_size_bytes: opts.logs.maxLogBytes,
    token,
    runnable_at: isoTime(job.runnableAt),
    priority: job.priority,
    ...signedStepFields(job),
  };
}

/**
 * What the agent verifies a signed job with (docs/security.md#signed-pipelines): `step`, the step exactly as
 * uploaded with its `signature`, and `matrix_permutation`, the job's matrix combination, which the agent interpolates
 * into the step before comparing it with the job's command, env and plugins. Jobs of unsigned steps have no `step`,
 * which an agent that verifies refuses as unsigned.
 */
export function signedStepFields(job: Pick<Job, "signedStepJson" | "matrix">): Partial<AgentJobBody> {
  const out: Partial<AgentJobBody> = {};
  if (job.signedStepJson !== "") out.step = JSON.parse(job.signedStepJson) as Record<string, unknown>;
  if (Object.keys(job.matrix).length > 0) out.matrix_permutation = { ...job.matrix };
  return out;
}

/** The agent's Job (docs/compatibility.md#the-job-object): env values strings, no exit status; keys the agent does not read are kept as sent. */
export const AgentJobSchema = Type.Object(
  {
    id: Type.String(),
    endpoint: Type.String(),
    state: Type.String(),
    env: Type.Record(Type.String(), Type.String()),
    chunks_max_size_bytes: Type.Integer({ minimum: 1 }),
    log_max_size_bytes: Type.Integer(),
    token: Type.String(),
    runnable_at: Type.Union([Type.String(), Type.Null()]),
    priority: Type.Integer(),
    step: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    matrix_permutation: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  { additionalProperties: true },
);
export type AgentJobBody = Static<typeof AgentJobSchema>;
