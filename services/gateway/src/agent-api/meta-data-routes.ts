import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { Bool, Str } from "../render/schemas.js";
import { responses, typed } from "../route-declarations/declare.js";
import { text } from "../route-declarations/params.js";
import type { AgentApiDeps } from "./agent-api.js";
import { Empty } from "./agent-routes.js";
import { AgentJobParams } from "./job-routes.js";

/** The longest key and value the routes accept before the builds service checks them in detail. */
const key = text(255, { minLength: 1 });
const value = text(100 * 1024);

const KeyBody = Type.Object({ key });
const SetBody = Type.Object({ key, value });
const BatchBody = Type.Object({ items: Type.Array(Type.Object({ key, value }), { minItems: 1, maxItems: 1000 }) });
const tags = ["agent"];

/**
 * Build meta-data as `buildkite-agent meta-data` uses it (docs/compatibility.md#meta-data): `set` and `set-batch` through a
 * job (the job names its build), `get`, `exists` and `keys` through a job or a build (`--build`). Values are
 * build-level; a missing key is 404, which the CLI turns into its `--default`.
 */
export function metaDataRoutes(app: FastifyInstance, deps: AgentApiDeps): void {
  const { clients, jobAccess } = deps;
  const config = { credential: ["job", "agent"] } as const;

  /** The build a meta-data route reads or writes: the job's build for /jobs/:id, the build for /builds/:id. */
  const buildOf = async (request: FastifyRequest & { params: { id: string } }, scope: "jobs" | "builds") =>
    scope === "jobs"
      ? (await jobAccess.job(request, request.params.id)).buildId
      : (await jobAccess.build(request, request.params.id)).buildId;

  const route = typed(app);

  route.post(
    "/v3/jobs/:id/data/set",
    {
      config,
      schema: {
        operationId: "agentSetMetaData",
        summary: "Set a build meta-data value",
        tags,
        params: AgentJobParams,
        body: SetBody,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      const { jobId, buildId } = await jobAccess.job(request, request.params.id);
      await clients.builds.setBuildMetaData({
        buildId,
        jobId,
        items: [{ key: request.body.key, value: request.body.value }],
      });
      return {};
    },
  );

  route.post(
    "/v3/jobs/:id/data/set-batch",
    {
      config,
      schema: {
        operationId: "agentSetMetaDataBatch",
        summary: "Set build meta-data values, all or none",
        tags,
        params: AgentJobParams,
        body: BatchBody,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      const { jobId, buildId } = await jobAccess.job(request, request.params.id);
      await clients.builds.setBuildMetaData({ buildId, jobId, items: request.body.items });
      return {};
    },
  );

  for (const scope of ["jobs", "builds"] as const) {
    const through = scope === "jobs" ? "Job" : "Build";
    route.post(
      `/v3/${scope}/:id/data/get`,
      {
        config,
        schema: {
          operationId: `agentGetMetaDataBy${through}`,
          summary: "Get a build meta-data value (404 when the key is missing)",
          tags,
          params: AgentJobParams,
          body: KeyBody,
          response: responses(200, Type.Object({ key: Str, value: Str })),
        },
      },
      async (request) => {
        const buildId = await buildOf(request, scope);
        const res = await clients.builds.getBuildMetaData({ buildId, key: request.body.key });
        if (!res.exists) throw new HttpError(404, `No meta-data value found for key "${request.body.key}"`);
        return { key: request.body.key, value: res.value };
      },
    );

    route.post(
      `/v3/${scope}/:id/data/exists`,
      {
        config,
        schema: {
          operationId: `agentMetaDataExistsBy${through}`,
          summary: "Whether a build meta-data key is set",
          tags,
          params: AgentJobParams,
          body: KeyBody,
          response: responses(200, Type.Object({ exists: Bool })),
        },
      },
      async (request) => {
        const buildId = await buildOf(request, scope);
        const res = await clients.builds.getBuildMetaData({ buildId, key: request.body.key });
        return { exists: res.exists };
      },
    );

    route.post(
      `/v3/${scope}/:id/data/keys`,
      {
        config,
        schema: {
          operationId: `agentMetaDataKeysBy${through}`,
          summary: "The build's meta-data keys",
          tags,
          params: AgentJobParams,
          response: responses(200, Type.Array(Str)),
        },
      },
      async (request) => {
        const buildId = await buildOf(request, scope);
        return (await clients.builds.listBuildMetaDataKeys({ buildId })).keys;
      },
    );
  }
}
