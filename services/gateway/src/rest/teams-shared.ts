/**
 * What the team association routes share: the team path and its params, the body value schema, the team routes'
 * declaration, the body readers, the team a request names and paging.
 */
import { type TSchema, Type } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { responses } from "../route-declarations/declare.js";
import { Id, Slug } from "../route-declarations/params.js";
import { linkHeader, PagingQuery, type PagingQueryValues, pageOf } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

export const TeamParams = Type.Object({ org: Slug, team: Id });

export const TEAM = "/v2/organizations/:org/teams/:team";

/**
 * The association bodies (docs/compatibility.md#teams). Presence and values (roles, levels) are identity's
 * to judge, so every problem is reported at once in its `{"message":"Validation failed: <reason>"}`; the schemas
 * bound the types and sizes (`bodyErrors: "sentence"` words their failures the same way).
 */
/** The JSON types other than a string, each its own branch (no union types: Ajv's strict mode refuses them). */
export const NOT_STRING = ["number", "boolean", "null", "object", "array"].map((type) => ({ type }));

/**
 * A body value identity judges: a string is bounded like any other, and a value of another type passes the schema
 * so that it is reported in Buildkite's words ("User can't be blank") rather than the validator's.
 */
export const judged = (max: number, description?: string) =>
  Type.Optional(
    Type.Unsafe<unknown>({
      anyOf: [{ type: "string", maxLength: max }, ...NOT_STRING],
      ...(description ? { description } : {}),
    }),
  );

const tags = ["teams"];

/** The declaration of a team route: its scope, schemas and the team routes' way of answering a bad body. */
export function declaration<S extends object>(scope: "view_teams" | "write_teams", schema: S) {
  return {
    config: { scope, bodyErrors: "sentence" as const },
    schema: { tags, ...schema },
  };
}

/** The declaration of a team association list: paged, answering an array of `item`. */
export const list = (operationId: string, summary: string, item: TSchema) =>
  declaration("view_teams", {
    operationId,
    summary,
    params: TeamParams,
    querystring: PagingQuery,
    response: responses(200, Type.Array(item)),
  });

/** A string property of a JSON body, trimmed; absent is "", which identity reports as missing. */
export function bodyString(body: unknown, key: string): string {
  const value = typeof body === "object" && body !== null ? (body as Record<string, unknown>)[key] : undefined;
  return typeof value === "string" ? value.trim() : "";
}

/** A property of a JSON body as it came (identity judges its type). */
export function bodyValue(body: unknown, key: string): unknown {
  return typeof body === "object" && body !== null ? (body as Record<string, unknown>)[key] : undefined;
}

/** The team a request names and who is asking; the organization must be reachable (else 404). */
export const teamOf = (request: FastifyRequest & { params: { org: string; team: string } }) => ({
  organizationId: organizationAccess(request, request.params.org).organization?.id ?? "",
  actorId: request.principal?.user?.id ?? "",
  teamId: request.params.team,
});

/** Lists one page through `fetch` and sets the Link header from its total. */
export const paged = async <T>(
  deps: Pick<RouteDeps, "publicUrl">,
  request: FastifyRequest & { query: PagingQueryValues },
  reply: { header(name: string, value: string): unknown },
  fetch: (page: number, perPage: number) => Promise<{ items: T[]; totalCount: number }>,
) => {
  const paging = pageOf(request.query);
  const { items, totalCount } = await fetch(paging.page, paging.perPage);
  const link = linkHeader(deps.publicUrl, request.url, paging, { total: totalCount });
  if (link) reply.header("link", link);
  return items;
};
