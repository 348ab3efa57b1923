import { Code, ConnectError } from "@connectrpc/connect";
import { isRunningJobState } from "@conveyor/ci-rules";
import { CredentialKind } from "@conveyor/proto/agents";
import { Type } from "@sinclair/typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { AgentArtifactSchema, renderAgentArtifact } from "../render/artifact.js";
import { responses } from "../route-declarations/declare.js";
import type { AgentApiDeps } from "./agent-api.js";
import { credentialOf } from "./agent-credentials.js";
import { Empty } from "./agent-routes.js";

type Params = { id: string };

/** The rule that lets jobs of one pipeline read the artifacts of another's builds. */
export const ARTIFACTS_READ_RULE = "pipeline.artifacts_read.pipeline";

/** The request body of `POST jobs/{id}/artifacts` (docs/compatibility.md#artifacts), bounded: the agent sends 30 artifacts at a time. */
export interface ArtifactBatchBody {
  id: string;
  upload_destination?: string;
  multipart_supported?: boolean;
  artifacts: Array<{
    path: string;
    file_size: number;
    sha1sum: string;
    sha256sum?: string;
    content_type?: string;
    glob_path?: string;
  }>;
}

const batchBodySchema = {
  type: "object",
  properties: {
    id: { type: "string", minLength: 1, maxLength: 64 },
    upload_destination: { type: "string", maxLength: 2048 },
    multipart_supported: { type: "boolean" },
    artifacts: {
      type: "array",
      minItems: 1,
      maxItems: 100,
      items: {
        type: "object",
        properties: {
          path: { type: "string", maxLength: 4096 },
          absolute_path: { type: "string", maxLength: 8192 },
          glob_path: { type: "string", maxLength: 4096 },
          file_size: { type: "integer", minimum: 0 },
          sha1sum: { type: "string", maxLength: 64 },
          sha256sum: { type: "string", maxLength: 128 },
          content_type: { type: "string", maxLength: 1024 },
        },
        required: ["path", "file_size", "sha1sum"],
      },
    },
  },
  required: ["id", "artifacts"],
} as const;

/** Where and how the agent uploads one artifact: a signed S3 POST form. */
const UploadInstructions = Type.Object({
  action: Type.Object({
    url: Type.String(),
    method: Type.String(),
    path: Type.String(),
    file_input: Type.String(),
  }),
  data: Type.Record(Type.String(), Type.String()),
});

/** The answer to a batch: the artifacts' ids and one upload form per artifact (null only with nothing to upload). */
const BatchCreatedSchema = Type.Object({
  id: Type.String(),
  artifact_ids: Type.Array(Type.String()),
  upload_instructions: Type.Union([UploadInstructions, Type.Null()]),
  per_artifact_instructions: Type.Record(Type.String(), UploadInstructions),
});

interface StatesBody {
  artifacts: Array<{ id: string; state: string }>;
}

const statesBodySchema = {
  type: "object",
  properties: {
    artifacts: {
      type: "array",
      maxItems: 100,
      items: {
        type: "object",
        properties: { id: { type: "string", maxLength: 64 }, state: { type: "string", maxLength: 32 } },
        required: ["id", "state"],
      },
    },
  },
  required: ["artifacts"],
} as const;

interface SearchQuery {
  query?: string;
  scope?: string;
  state?: string;
  include_retried_jobs?: string;
  include_duplicates?: string;
}

const searchQuerySchema = {
  type: "object",
  properties: {
    query: { type: "string", maxLength: 1024 },
    scope: { type: "string", maxLength: 512 },
    state: { type: "string", maxLength: 32 },
    include_retried_jobs: { type: "string", maxLength: 8 },
    include_duplicates: { type: "string", maxLength: 8 },
  },
} as const;

const truthy = (v: string | undefined) => v === "true" || v === "1";

/**
 * The agent's artifact calls (docs/compatibility.md#artifacts): batch create with one signed S3 POST form per artifact (the
 * agent uploads straight to the object store, or to the gateway's /objects proxy), state updates, and search with
 * signed download URLs. Search covers the caller's build, or another build when the caller's pipeline is that
 * build's or a `pipeline.artifacts_read.pipeline` rule lets it read that pipeline's artifacts.
 */
export function artifactAgentRoutes(app: FastifyInstance, deps: AgentApiDeps): void {
  const { clients, jobAccess } = deps;
  const config = { credential: ["job", "agent"] } as const;
  const urlBase = deps.artifactUrlBase;

  /** A job by id (the caller's own, already checked), as the builds service has it. */
  const jobOf = async (jobId: string) => {
    const { job } = await clients.builds.getJob({ jobId });
    if (!job) throw new HttpError(404, "No job found");
    return job;
  };

  /** The caller's job, while it runs: a finished job's artifacts are neither announced nor finished any more. */
  const runningJobOf = async (jobId: string) => {
    const job = await jobOf(jobId);
    if (!isRunningJobState(job.state)) {
      throw new HttpError(422, `The job is ${job.state}: artifacts can be uploaded only while it runs`);
    }
    return job;
  };

  app.post<{ Params: Params; Body: ArtifactBatchBody }>(
    "/v3/jobs/:id/artifacts",
    {
      config,
      schema: {
        operationId: "agentCreateArtifacts",
        summary: "Announce a batch of artifacts; answers one signed upload form per artifact",
        tags: ["agent"],
        body: batchBodySchema,
        response: responses(201, BatchCreatedSchema),
      },
    },
    async (request, reply) => {
      const { jobId } = await jobAccess.job(request, request.params.id);
      const body = request.body;
      if (body.upload_destination) {
        throw new HttpError(422, "Only the default artifact storage is supported: upload without --destination");
      }
      const job = await runningJobOf(jobId);
      const res = await clients.artifacts
        .createArtifactBatch({
          organizationId: job.organizationId,
          pipelineId: job.pipelineId,
          buildId: job.buildId,
          buildNumber: job.buildNumber,
          jobId,
          batchId: body.id,
          urlBase,
          artifacts: body.artifacts.map((a) => ({
            path: a.path,
            fileSize: BigInt(a.file_size),
            sha1sum: a.sha1sum,
            sha256sum: a.sha256sum ?? "",
            contentType: a.content_type ?? "",
            globPath: a.glob_path ?? "",
          })),
        })
        .catch((err: unknown) => {
          // The quota answer the agent knows (403: it stops retrying and says why).
          const e = ConnectError.from(err);
          throw e.code === Code.PermissionDenied ? new HttpError(403, e.rawMessage) : err;
        });
      const instructions = (u: (typeof res.uploads)[number]) => {
        const url = new URL(u.url);
        return {
          action: { url: url.origin + url.pathname, method: "POST", path: url.pathname, file_input: u.fileField },
          data: u.fields,
        };
      };
      const first = res.uploads[0];
      return reply.status(201).send({
        id: body.id,
        artifact_ids: res.artifacts.map((a) => a.id),
        // Never null (the agent dereferences it); every artifact has its own form below, which the agent prefers.
        upload_instructions: first ? { ...instructions(first), data: {} } : null,
        per_artifact_instructions: Object.fromEntries(res.uploads.map((u) => [u.artifactId, instructions(u)])),
      });
    },
  );

  app.put<{ Params: Params; Body: StatesBody }>(
    "/v3/jobs/:id/artifacts",
    {
      config,
      schema: {
        operationId: "agentUpdateArtifacts",
        summary: "Mark announced artifacts finished or errored",
        tags: ["agent"],
        body: statesBodySchema,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      const { jobId } = await jobAccess.job(request, request.params.id);
      await runningJobOf(jobId);
      await clients.artifacts.updateArtifactStates({
        jobId,
        updates: request.body.artifacts.map((a) => ({ id: a.id, state: a.state })),
      });
      return {};
    },
  );

  /**
   * The build a search reads, if the caller may: its own (a job token's build, or the build of the job an agent
   * holds), another build of its pipeline, or a build of a pipeline an artifacts_read rule opens to it.
   */
  const readableBuild = async (request: FastifyRequest, buildId: string) => {
    const credential = credentialOf(request);
    if (credential.kind !== CredentialKind.JOB || credential.buildId === buildId) {
      await jobAccess.build(request, buildId);
      return { own: true as const };
    }
    const located = await clients.artifacts.locateBuild({ buildId }).catch((err: unknown) => {
      if (ConnectError.from(err).code === Code.NotFound) return undefined;
      throw err;
    });
    // A build without artifacts has nothing to find; one of another organization is none of the caller's business.
    if (!located || located.organizationId !== credential.organizationId) throw new HttpError(404, "No build found");
    const source = await jobOf(credential.jobId);
    if (source.pipelineId !== located.pipelineId) {
      const { allowed } = await clients.rules.checkRule({
        organizationId: located.organizationId,
        type: ARTIFACTS_READ_RULE,
        sourceId: source.pipelineId,
        targetId: located.pipelineId,
      });
      if (!allowed) {
        throw new HttpError(
          403,
          `No ${ARTIFACTS_READ_RULE} rule lets this pipeline read artifacts of the build's pipeline`,
        );
      }
    }
    return { own: false as const, located };
  };

  app.get<{ Params: Params; Querystring: SearchQuery }>(
    "/v3/builds/:id/artifacts/search",
    {
      config,
      schema: {
        operationId: "agentSearchArtifacts",
        summary: "Find a build's artifacts by path glob, with signed download URLs",
        tags: ["agent"],
        querystring: searchQuerySchema,
        response: responses(200, Type.Array(AgentArtifactSchema)),
      },
    },
    async (request) => {
      const buildId = request.params.id;
      const access = await readableBuild(request, buildId);
      const q = request.query;
      const includeRetried = truthy(q.include_retried_jobs);
      const scope = q.scope ?? "";
      let jobIds: string[] = [];
      let excludeJobIds: string[] = [];
      if (scope !== "" || !includeRetried) {
        // Scope (a step key, a label or a job id) and retried jobs are the build's business: ask it once.
        const located =
          access.own === false
            ? access.located
            : await clients.artifacts.locateBuild({ buildId }).catch((err: unknown) => {
                if (ConnectError.from(err).code === Code.NotFound) return undefined;
                throw err;
              });
        if (!located) return [];
        const { build } = await clients.builds.getBuild({
          pipelineId: located.pipelineId,
          number: located.buildNumber,
          includeRetriedJobs: true,
        });
        const jobs = build?.jobs ?? [];
        if (scope !== "") {
          jobIds = jobs.filter((j) => j.id === scope || j.stepKey === scope || j.label === scope).map((j) => j.id);
          if (jobIds.length === 0) return [];
        }
        if (!includeRetried) excludeJobIds = jobs.filter((j) => j.retried).map((j) => j.id);
      }
      const res = await clients.artifacts.searchArtifacts({
        buildId,
        query: q.query ?? "",
        jobIds,
        excludeJobIds,
        state: q.state ?? "",
        includeDuplicates: truthy(q.include_duplicates),
        urlBase,
      });
      return res.artifacts.flatMap((s) => (s.artifact ? [renderAgentArtifact(s.artifact, s.url)] : []));
    },
  );
}
