import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../http-error.js";
import { linkHeader, pagingQuerySchema, parsePaging } from "../paging.js";
import { createdRegistryTokenSchema, registryTokenSchema, renderRegistryToken } from "../render/registry-token.js";
import { arrayOf, errorSchema } from "../render/schemas.js";
import { type RouteDeps, rpcOptions } from "./deps.js";

type RegistryParams = { org: string; registry: string };
type TokenParams = RegistryParams & { token: string };

const BASE = "/v2/packages/organizations/:org/registries/:registry/tokens";

const response = (ok: object, okStatus = 200) => ({ [okStatus]: ok, "4xx": errorSchema });

const descriptionBody = {
  type: "object",
  properties: { description: { type: "string" } },
} as const;

/**
 * The registry token routes: list, get, create (POST on the collection, 200, the only answer with the secret),
 * update (POST on the token, 200) and delete (200), as Buildkite's package registry API has them.
 */
export function registryTokenRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;
  const scope = (request: FastifyRequest<{ Params: RegistryParams }>) => {
    const org = organizationAccess(request, request.params.org).organization;
    if (!org) throw new HttpError(404, "No organization found");
    return { org, organizationId: org.id, registry: request.params.registry };
  };

  app.get<{ Params: RegistryParams; Querystring: { page?: string; per_page?: string } }>(
    BASE,
    {
      schema: {
        querystring: { type: "object", properties: pagingQuerySchema },
        response: response(arrayOf(registryTokenSchema)),
      },
    },
    async (request, reply) => {
      const { org, ...req } = scope(request);
      const paging = parsePaging(request.query);
      const res = await clients.registries.listRegistryTokens(
        { ...req, page: paging.page, perPage: paging.perPage },
        rpcOptions(request),
      );
      const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
      if (link) reply.header("link", link);
      const registry = res.registry;
      if (!registry) throw new HttpError(404, "No registry found");
      return res.tokens.map((t) => renderRegistryToken(t, registry, org, urls));
    },
  );

  app.get<{ Params: TokenParams }>(
    `${BASE}/:token`,
    { schema: { response: response(registryTokenSchema) } },
    async (request) => {
      const { org, ...req } = scope(request);
      const res = await clients.registries.getRegistryToken({ ...req, id: request.params.token }, rpcOptions(request));
      if (!res.token || !res.registry) throw new HttpError(404, "No token found");
      return renderRegistryToken(res.token, res.registry, org, urls);
    },
  );

  app.post<{ Params: RegistryParams; Body: { description?: string } | undefined }>(
    BASE,
    { schema: { body: descriptionBody, response: response(createdRegistryTokenSchema) } },
    async (request) => {
      const { org, ...req } = scope(request);
      const res = await clients.registries.createRegistryToken(
        { ...req, actorId: request.principal?.user?.id ?? "", description: request.body?.description ?? "" },
        rpcOptions(request),
      );
      if (!res.token || !res.registry) throw new HttpError(404, "No token found");
      return { ...renderRegistryToken(res.token, res.registry, org, urls), token: res.secret };
    },
  );

  app.post<{ Params: TokenParams; Body: { description?: string } | undefined }>(
    `${BASE}/:token`,
    { schema: { body: descriptionBody, response: response(registryTokenSchema) } },
    async (request) => {
      const { org, ...req } = scope(request);
      const res = await clients.registries.updateRegistryToken(
        {
          ...req,
          actorId: request.principal?.user?.id ?? "",
          id: request.params.token,
          description: request.body?.description ?? "",
        },
        rpcOptions(request),
      );
      if (!res.token || !res.registry) throw new HttpError(404, "No token found");
      return renderRegistryToken(res.token, res.registry, org, urls);
    },
  );

  app.delete<{ Params: TokenParams }>(
    `${BASE}/:token`,
    { schema: { response: { "4xx": errorSchema } } },
    async (request, reply) => {
      const { org: _org, ...req } = scope(request);
      await clients.registries.deleteRegistryToken(
        { ...req, actorId: request.principal?.user?.id ?? "", id: request.params.token },
        rpcOptions(request),
      );
      return reply.status(200).send();
    },
  );
}
