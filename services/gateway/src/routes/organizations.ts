import type { FastifyInstance } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { linkHeader, type PageRequest, pagingQuerySchema, parsePaging } from "../paging.js";
import { organizationSchema, renderOrganization } from "../render/organization.js";
import { arrayOf, errorSchema } from "../render/schemas.js";
import { type RouteDeps, rpcOptions } from "./deps.js";

const orgParams = { type: "object", properties: { org: { type: "string" } }, required: ["org"] } as const;

/** GET /v2/organizations and GET /v2/organizations/:org. */
export function organizationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<{ Querystring: { page?: string; per_page?: string } }>(
    "/v2/organizations",
    {
      schema: {
        querystring: { type: "object", properties: pagingQuerySchema },
        response: { 200: arrayOf(organizationSchema), "4xx": errorSchema },
      },
    },
    async (request, reply) => {
      const paging: PageRequest = parsePaging(request.query);
      const ids = (request.principal?.organizations ?? []).flatMap((o) => (o.organization ? [o.organization.id] : []));
      const res = await deps.clients.identity.listOrganizations(
        { ids, page: paging.page, perPage: paging.perPage },
        rpcOptions(request),
      );
      const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
      if (link) reply.header("link", link);
      return res.organizations.map((o) => renderOrganization(o, deps.urls));
    },
  );

  // Served from the caller's principal, which identity resolved moments ago (cached for TOKEN_CACHE_TTL_MS): the
  // organization record comes with the access decision, so no further hop is needed.
  app.get<{ Params: { org: string } }>(
    "/v2/organizations/:org",
    { schema: { params: orgParams, response: { 200: organizationSchema, "4xx": errorSchema } } },
    async (request) => {
      const access = organizationAccess(request, request.params.org);
      return renderOrganization(access.organization as NonNullable<typeof access.organization>, deps.urls);
    },
  );
}
