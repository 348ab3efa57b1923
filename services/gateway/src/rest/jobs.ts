import type { Job } from "@conveyor/proto/builds";
import type { OrganizationAccess } from "@conveyor/proto/identity";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { callerOf, organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../errors/http-error.js";
import { buildApiUrl } from "../render/build.js";
import { JobSchema, renderJob } from "../render/job.js";
import { StringMap } from "../render/schemas.js";
import { responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, JobParams, text } from "../route-declarations/params.js";
import { onlyFields } from "../route-declarations/unknown-fields.js";
import type { RouteDeps } from "./route-deps.js";

/** The most values one field may carry. */
const MAX_FIELD_VALUES = 100;

/** The body of an unblock: each field's value, a list for a multiple select. */
const UnblockBodySchema = Type.Union([
  Type.Object({
    fields: Type.Optional(
      Type.Union([
        Type.Record(
          Type.String(),
          Type.Union([text(BOUNDS.value), Type.Array(text(BOUNDS.value), { maxItems: MAX_FIELD_VALUES }), Type.Null()]),
          { maxProperties: 100, propertyNames: { maxLength: BOUNDS.key } },
        ),
        Type.Null(),
      ]),
    ),
    unblocker: Type.Optional(Type.Union([text(BOUNDS.id), Type.Null()])),
  }),
  Type.Null(),
]);

const EnvSchema = Type.Object({ env: StringMap });

/** The largest dispatch priority either way (docs/limits.md; the builds service holds the same bound). */
const MAX_PRIORITY = 1_000_000;
const ReprioritizeFields = {
  priority: Type.Integer({
    minimum: -MAX_PRIORITY,
    maximum: MAX_PRIORITY,
    description: "the job's new dispatch priority: higher is dispatched first",
  }),
};
const tags = ["jobs"];

/**
 * What people do to one job of a build (Buildkite's jobs API, go-buildkite's JobsService): retry it
 * (`PUT …/retry`, the new attempt back), unblock a block or input step with values for its fields
 * (`PUT …/unblock`), change the dispatch priority of one no agent has taken yet (`PUT …/reprioritize`), and read
 * the environment it runs with (`GET …/env`, scope read_job_env).
 */
export function jobRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const path = "/v2/organizations/:org/pipelines/:pipeline/builds/:number/jobs/:job";

  /** The pipeline and build number of a job route, when the caller may take `action` on the pipeline. */
  const target = async (
    request: FastifyRequest & { params: { org: string; pipeline: string; number: number } },
    action: "read" | "build",
  ) => {
    const access = organizationAccess(request, request.params.org);
    const number = request.params.number;
    const { pipeline, canBuild } = await deps.pipelineAccess.pipeline(request, access, request.params.pipeline, action);
    return { access, pipeline, number, canBuild };
  };

  const render = (job: Job | undefined, access: OrganizationAccess, pipeline: Pipeline, number: number) => {
    if (!job) throw new HttpError(404, "No job found");
    const orgSlug = access.organization?.slug ?? "";
    const api = buildApiUrl(deps.urls, orgSlug, pipeline.slug, number);
    const web = deps.urls.web(`${orgSlug}/${pipeline.slug}/builds/${number}`);
    return renderJob(job, { urls: deps.urls, orgSlug, api, web }, "single");
  };

  const route = typed(app);

  route.put(
    `${path}/retry`,
    {
      config: { scope: "write_builds" },
      schema: {
        operationId: "retryJob",
        summary: "Retry a failed, timed out or canceled job: the new attempt",
        tags,
        params: JobParams,
        response: responses(200, JobSchema),
      },
    },
    async (request) => {
      const { access, pipeline, number } = await target(request, "build");
      const res = await deps.clients.builds.retryJob({
        pipelineId: pipeline.id,
        number,
        jobId: request.params.job,
        user: callerOf(request),
      });
      return render(res.job, access, pipeline, number);
    },
  );

  route.put(
    `${path}/unblock`,
    {
      config: { scope: "write_builds" },
      schema: {
        operationId: "unblockJob",
        summary: "Unblock a block or input step with values for its fields",
        tags,
        params: JobParams,
        body: UnblockBodySchema,
        response: responses(200, JobSchema),
      },
    },
    async (request) => {
      // Reading the pipeline is enough to ask: a step's allowed_teams, when it has them, decide instead of the
      // caller's build access (builds checks both, see ci-rules' unblock-permission.ts).
      const { access, pipeline, number, canBuild } = await target(request, "read");
      const userId = request.principal?.user?.id ?? "";
      const { teams } = userId
        ? await deps.clients.teams.listUserTeams({ organizationId: access.organization?.id ?? "", userId })
        : { teams: [] };
      const fields: Record<string, { values: string[] }> = {};
      for (const [key, value] of Object.entries(request.body?.fields ?? {})) {
        if (value === null) continue;
        fields[key] = { values: typeof value === "string" ? [value] : value };
      }
      const res = await deps.clients.builds.unblockJob({
        pipelineId: pipeline.id,
        number,
        jobId: request.params.job,
        user: callerOf(request),
        fields,
        callerTeams: teams.flatMap((team) => [team.id, team.slug]),
        readOnly: !canBuild,
      });
      return render(res.job, access, pipeline, number);
    },
  );

  route.put(
    `${path}/reprioritize`,
    {
      config: { scope: "write_builds" },
      preValidation: onlyFields(Object.keys(ReprioritizeFields)),
      schema: {
        operationId: "reprioritizeJob",
        summary: "Change the dispatch priority of a command job no agent has taken yet",
        tags,
        params: JobParams,
        body: Type.Object(ReprioritizeFields),
        response: responses(200, JobSchema),
      },
    },
    async (request) => {
      const { access, pipeline, number } = await target(request, "build");
      const res = await deps.clients.builds.updateJob({
        jobId: request.params.job,
        pipelineId: pipeline.id,
        number,
        priority: request.body.priority,
      });
      return render(res.job, access, pipeline, number);
    },
  );

  route.get(
    `${path}/env`,
    {
      config: { scope: "read_job_env" },
      schema: {
        operationId: "getJobEnv",
        summary: "The environment a job runs with",
        tags,
        params: JobParams,
        response: responses(200, EnvSchema),
      },
    },
    async (request) => {
      const { pipeline, number } = await target(request, "read");
      const res = await deps.clients.builds.getJobEnv({ pipelineId: pipeline.id, number, jobId: request.params.job });
      return { env: res.env };
    },
  );
}
