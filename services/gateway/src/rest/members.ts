import { isUuid } from "@conveyor/runtime";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../errors/http-error.js";
import { MemberSchema, renderMember } from "../render/user.js";
import { responses, typed } from "../route-declarations/declare.js";
import { Id, OrgParams, Slug } from "../route-declarations/params.js";
import { linkHeader, PagingQuery, pageOf } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

const tags = ["organizations"];

/** GET /v2/organizations/:org/members and GET /v2/organizations/:org/members/:user. */
export function memberRoutes(app: FastifyInstance, deps: RouteDeps): void {
  typed(app).get(
    "/v2/organizations/:org/members",
    {
      config: { scope: "read_organizations" },
      schema: {
        operationId: "listMembers",
        summary: "List an organization's members",
        tags,
        params: OrgParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(MemberSchema)),
      },
    },
    async (request, reply) => {
      const org = organizationAccess(request, request.params.org).organization;
      const paging = pageOf(request.query);
      const res = await deps.clients.identity.listMembers({
        organizationId: org?.id ?? "",
        page: paging.page,
        perPage: paging.perPage,
      });
      const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
      if (link) reply.header("link", link);
      return res.members.flatMap((m) => (m.user ? [renderMember(m.user)] : []));
    },
  );

  typed(app).get(
    "/v2/organizations/:org/members/:user",
    {
      config: { scope: "read_organizations" },
      schema: {
        operationId: "getMember",
        summary: "Get one member of an organization by user UUID",
        tags,
        params: Type.Object({ org: Slug, user: Id }),
        response: responses(200, MemberSchema),
      },
    },
    async (request) => {
      const org = organizationAccess(request, request.params.org).organization;
      if (!isUuid(request.params.user)) throw new HttpError(404, "No user found");
      const { member } = await deps.clients.identity.getMember({
        organizationId: org?.id ?? "",
        userId: request.params.user,
      });
      if (!member?.user) throw new HttpError(404, "No user found");
      return renderMember(member.user);
    },
  );
}
