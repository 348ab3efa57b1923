/**
 * The team pipeline routes: list, get, give, change the access level of and take a team's pipelines
 * (docs/compatibility.md#teams).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { PIPELINE_LEVELS_IN_WORDS, pipelineLevelOf, renderTeamPipeline, TeamPipelineSchema } from "../render/team.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, Id, Slug, text } from "../route-declarations/params.js";
import type { RouteDeps } from "./route-deps.js";
import { bodyString, bodyValue, declaration, judged, list, paged, TEAM, TeamParams, teamOf } from "./teams-shared.js";

const TeamPipelineParams = Type.Object({ org: Slug, team: Id, pipeline: Id });

const pipelineLevel = judged(BOUNDS.name, PIPELINE_LEVELS_IN_WORDS);
const AddPipelineBody = Type.Object({ pipeline_id: judged(BOUNDS.slug), access_level: pipelineLevel });
const UpdatePipelineBody = Type.Object({ access_level: pipelineLevel });
const RemovePipelineBody = Type.Object({ pipeline_id: judged(BOUNDS.id) });

/** The team pipeline routes, with both path spellings of giving and of taking a pipeline. */
export function teamPipelineRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;
  const route = typed(app);

  route.get(
    `${TEAM}/pipelines`,
    list("listTeamPipelines", "List the pipelines a team has access to", TeamPipelineSchema),
    async (request, reply) => {
      const items = await paged(deps, request, reply, async (page, perPage) => {
        const res = await clients.teams.listTeamPipelines({ ...teamOf(request), page, perPage });
        return { items: res.pipelines, totalCount: res.totalCount };
      });
      return items.map((l) => renderTeamPipeline(l, urls, request.params.org));
    },
  );

  route.get(
    `${TEAM}/pipelines/:pipeline`,
    declaration("view_teams", {
      operationId: "getTeamPipeline",
      summary: "Get a team's access to a pipeline",
      params: TeamPipelineParams,
      response: responses(200, TeamPipelineSchema),
    }),
    async (request) => {
      const res = await clients.teams.getTeamPipeline({ ...teamOf(request), pipelineId: request.params.pipeline });
      if (!res.pipeline) throw new HttpError(404, "No team pipeline found");
      return renderTeamPipeline(res.pipeline, urls, request.params.org);
    },
  );

  for (const [path, operationId] of [
    [`${TEAM}/pipelines`, "addTeamPipeline"],
    [`${TEAM}/pipelines/`, "addTeamPipelineSlash"],
  ] as const) {
    route.post(
      path,
      declaration("write_teams", {
        operationId,
        summary: "Give a team access to a pipeline",
        params: TeamParams,
        body: AddPipelineBody,
        response: responses(201, TeamPipelineSchema),
      }),
      async (request, reply) => {
        const team = teamOf(request);
        // Pipelines belong to the pipelines service: only one of this organization may be added. One that is not
        // found goes on as "" for identity to report with the request's other problems, once the team is found.
        const ref = bodyString(request.body, "pipeline_id");
        let pipelineId = "";
        if (ref !== "") {
          try {
            const found = await clients.pipelines.getPipeline({ organizationId: team.organizationId, pipeline: ref });
            pipelineId = found.pipeline?.id ?? "";
          } catch (err) {
            if (ConnectError.from(err).code !== Code.NotFound) throw err;
          }
        }
        const res = await clients.teams.addTeamPipeline({
          ...team,
          pipelineId,
          accessLevel: pipelineLevelOf(bodyValue(request.body, "access_level")),
        });
        if (!res.pipeline) throw new HttpError(404, "No team pipeline found");
        return reply.status(201).send(renderTeamPipeline(res.pipeline, urls, request.params.org));
      },
    );
  }

  route.patch(
    `${TEAM}/pipelines/:pipeline`,
    declaration("write_teams", {
      operationId: "updateTeamPipeline",
      summary: "Change a team's access level to a pipeline",
      params: TeamPipelineParams,
      body: UpdatePipelineBody,
      response: responses(200, TeamPipelineSchema),
    }),
    async (request) => {
      const res = await clients.teams.updateTeamPipeline({
        ...teamOf(request),
        pipelineId: request.params.pipeline,
        accessLevel: pipelineLevelOf(bodyValue(request.body, "access_level")),
      });
      if (!res.pipeline) throw new HttpError(404, "No team pipeline found");
      return renderTeamPipeline(res.pipeline, urls, request.params.org);
    },
  );

  route.delete(
    `${TEAM}/pipelines/:pipeline`,
    declaration("write_teams", {
      operationId: "removeTeamPipeline",
      summary: "Take a pipeline from a team",
      params: TeamPipelineParams,
      response: noContent,
    }),
    async (request, reply) => {
      await clients.teams.removeTeamPipeline({ ...teamOf(request), pipelineId: request.params.pipeline });
      return reply.status(204).send();
    },
  );

  // The published form names no pipeline in the path: it comes as pipeline_id in the JSON body or the query string.
  route.delete(
    `${TEAM}/pipelines/`,
    declaration("write_teams", {
      operationId: "removeTeamPipelineNamedInBody",
      summary: "Take a pipeline from a team, naming it as pipeline_id in the body or query string",
      params: TeamParams,
      querystring: Type.Object({ pipeline_id: Type.Optional(text(BOUNDS.id)) }),
      body: Type.Union([RemovePipelineBody, Type.Null()]),
      response: noContent,
    }),
    async (request, reply) => {
      const pipelineId = bodyString(request.body, "pipeline_id") || (request.query.pipeline_id ?? "").trim();
      if (pipelineId === "") {
        throw new HttpError(
          422,
          "Team pipeline could not be deleted: name the pipeline by its UUID as pipeline_id, in the body or the query string",
        );
      }
      await clients.teams.removeTeamPipeline({ ...teamOf(request), pipelineId });
      return reply.status(204).send();
    },
  );
}
