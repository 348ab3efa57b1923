/**
 * The team suite routes: list, get, give, change the access levels of and take a team's test suites
 * (docs/compatibility.md#teams).
 */
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { renderTeamSuite, suiteLevelsOf, TeamSuiteSchema } from "../render/team.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, Id, Slug } from "../route-declarations/params.js";
import type { RouteDeps } from "./route-deps.js";
import {
  bodyString,
  bodyValue,
  declaration,
  judged,
  list,
  NOT_STRING,
  paged,
  TEAM,
  TeamParams,
  teamOf,
} from "./teams-shared.js";

const SuiteParams = Type.Object({ org: Slug, team: Id, suite: Id });

const suiteLevels = Type.Optional(
  Type.Unsafe<unknown>({
    anyOf: [
      { type: "string", maxLength: BOUNDS.name },
      { type: "array", maxItems: 10, items: { anyOf: [{ type: "string", maxLength: BOUNDS.name }, ...NOT_STRING] } },
      ...NOT_STRING.filter((t) => t.type !== "array"),
    ],
    description: "an array of read and edit",
  }),
);
const AddSuiteBody = Type.Object({ suite_id: judged(BOUNDS.id), access_level: suiteLevels });
const UpdateSuiteBody = Type.Object({ access_level: suiteLevels });

/** The team suite routes, with the path spellings clients use for adding and removing a suite. */
export function teamSuiteRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;
  const route = typed(app);

  route.get(
    `${TEAM}/suites`,
    list("listTeamSuites", "List the test suites a team has access to", TeamSuiteSchema),
    async (request, reply) => {
      const items = await paged(deps, request, reply, async (page, perPage) => {
        const res = await clients.teams.listTeamSuites({ ...teamOf(request), page, perPage });
        return { items: res.suites, totalCount: res.totalCount };
      });
      return items.map((l) => renderTeamSuite(l, urls, request.params.org));
    },
  );

  route.get(
    `${TEAM}/suites/:suite`,
    declaration("view_teams", {
      operationId: "getTeamSuite",
      summary: "Get a team's access to a test suite",
      params: SuiteParams,
      response: responses(200, TeamSuiteSchema),
    }),
    async (request) => {
      const res = await clients.teams.getTeamSuite({ ...teamOf(request), suiteId: request.params.suite });
      if (!res.suite) throw new HttpError(404, "No team suite found");
      return renderTeamSuite(res.suite, urls, request.params.org);
    },
  );

  // Published as the singular `suite/`; go-buildkite posts to `suite`, the current docs to `suites/`.
  for (const [path, operationId] of [
    [`${TEAM}/suite`, "addTeamSuite"],
    [`${TEAM}/suite/`, "addTeamSuiteSlash"],
    [`${TEAM}/suites`, "addTeamSuitePlural"],
    [`${TEAM}/suites/`, "addTeamSuitePluralSlash"],
  ] as const) {
    route.post(
      path,
      declaration("write_teams", {
        operationId,
        summary: "Give a team access to a test suite",
        params: TeamParams,
        body: AddSuiteBody,
        response: responses(201, TeamSuiteSchema),
      }),
      async (request, reply) => {
        const res = await clients.teams.addTeamSuite({
          ...teamOf(request),
          suiteId: bodyString(request.body, "suite_id"),
          accessLevels: suiteLevelsOf(bodyValue(request.body, "access_level")),
        });
        if (!res.suite) throw new HttpError(404, "No team suite found");
        return reply.status(201).send(renderTeamSuite(res.suite, urls, request.params.org));
      },
    );
  }

  route.patch(
    `${TEAM}/suites/:suite`,
    declaration("write_teams", {
      operationId: "updateTeamSuite",
      summary: "Change a team's access levels to a test suite",
      params: SuiteParams,
      body: UpdateSuiteBody,
      response: responses(200, TeamSuiteSchema),
    }),
    async (request) => {
      const res = await clients.teams.updateTeamSuite({
        ...teamOf(request),
        suiteId: request.params.suite,
        accessLevels: suiteLevelsOf(bodyValue(request.body, "access_level")),
      });
      if (!res.suite) throw new HttpError(404, "No team suite found");
      return renderTeamSuite(res.suite, urls, request.params.org);
    },
  );

  for (const [path, operationId] of [
    [`${TEAM}/suites/:suite`, "removeTeamSuite"],
    [`${TEAM}/suites/:suite/`, "removeTeamSuiteSlash"],
  ] as const) {
    route.delete(
      path,
      declaration("write_teams", {
        operationId,
        summary: "Take a test suite from a team",
        params: SuiteParams,
        response: noContent,
      }),
      async (request, reply) => {
        await clients.teams.removeTeamSuite({ ...teamOf(request), suiteId: request.params.suite });
        return reply.status(204).send();
      },
    );
  }
}
