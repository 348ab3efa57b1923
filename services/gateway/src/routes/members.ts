import { isUuid } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../http-error.js";
import { linkHeader, pagingQuerySchema, parsePaging } from "../paging.js";
import { arrayOf, errorSchema } from "../render/schemas.js";
import { memberSchema, renderMember } from "../render/user.js";
import { type RouteDeps, rpcOptions } from "./deps.js";

/** GET /v2/organizations/:org/members and GET /v2/organizations/:org/members/:user. */
export function memberRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<{ Params: { org: string }; Querystring: { page?: string; per_page?: string } }>(
    "/v2/organizations/:org/members",
    {
      schema: {
        querystring: { type: "object", properties: pagingQuerySchema },
        response: { 200: arrayOf(memberSchema), "4xx": errorSchema },
      },
    },
    async (request, reply) => {
      const org = organizationAccess(request, request.params.org).organization;
      const paging = parsePaging(request.query);
      const res = await deps.clients.identity.listMembers(
        { organizationId: org?.id ?? "", page: paging.page, perPage: paging.perPage },
        rpcOptions(request),
      );
      const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
      if (link) reply.header("link", link);
      return res.members.flatMap((m) => (m.user ? [renderMember(m.user)] : []));
    },
  );

  app.get<{ Params: { org: string; user: string } }>(
    "/v2/organizations/:org/members/:user",
    { schema: { response: { 200: memberSchema, "4xx": errorSchema } } },
    async (request) => {
      const org = organizationAccess(request, request.params.org).organization;
      if (!isUuid(request.params.user)) throw new HttpError(404, "No user found");
      const { member } = await deps.clients.identity.getMember(
        { organizationId: org?.id ?? "", userId: request.params.user },
        rpcOptions(request),
      );
      if (!member?.user) throw new HttpError(404, "No user found");
      return renderMember(member.user);
    },
  );
}
