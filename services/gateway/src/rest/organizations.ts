import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { OrganizationSchema, renderOrganization } from "../render/organization.js";
import { responses, typed } from "../route-declarations/declare.js";
import { OrgParams } from "../route-declarations/params.js";
import { linkHeader, PagingQuery, pageOf } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

const tags = ["organizations"];

/** GET /v2/organizations and GET /v2/organizations/:org. */
export function organizationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  typed(app).get(
    "/v2/organizations",
    {
      config: { scope: "read_organizations" },
      schema: {
        operationId: "listOrganizations",
        summary: "List the organizations the token may reach",
        tags,
        querystring: PagingQuery,
        response: responses(200, Type.Array(OrganizationSchema)),
      },
    },
    async (request, reply) => {
      const paging = pageOf(request.query);
      const ids = (request.principal?.organizations ?? []).flatMap((o) => (o.organization ? [o.organization.id] : []));
      const res = await deps.clients.identity.listOrganizations({ ids, page: paging.page, perPage: paging.perPage });
      const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
      if (link) reply.header("link", link);
      return res.organizations.map((o) => renderOrganization(o, deps.urls));
    },
  );

  // Served from the caller's principal, which identity resolved moments ago (cached for TOKEN_CACHE_TTL_MS): the
  // organization record comes with the access decision, so no further hop is needed.
  typed(app).get(
    "/v2/organizations/:org",
    {
      config: { scope: "read_organizations" },
      schema: {
        operationId: "getOrganization",
        summary: "Get an organization",
        tags,
        params: OrgParams,
        response: responses(200, OrganizationSchema),
      },
    },
    async (request) => {
      const access = organizationAccess(request, request.params.org);
      return renderOrganization(access.organization as NonNullable<typeof access.organization>, deps.urls);
    },
  );
}
