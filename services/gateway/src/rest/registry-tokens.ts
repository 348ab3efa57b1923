import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../errors/http-error.js";
import { CreatedRegistryTokenSchema, RegistryTokenSchema, renderRegistryToken } from "../render/registry-token.js";
import { responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, Id, Slug, text } from "../route-declarations/params.js";
import { linkHeader, PagingQuery, pageOf } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

const RegistryParams = Type.Object({ org: Slug, registry: Slug });
const TokenParams = Type.Object({ org: Slug, registry: Slug, token: Id });

const BASE = "/v2/packages/organizations/:org/registries/:registry/tokens";

const DescriptionBody = Type.Object({ description: Type.Optional(text(BOUNDS.text)) });
const tags = ["registry-tokens"];

/**
 * The registry token routes: list, get, create (POST on the collection, 200, the only answer with the secret),
 * update (POST on the token, 200) and delete (200), as Buildkite's package registry API has them.
 */
export function registryTokenRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;
  const scope = (request: FastifyRequest & { params: { org: string; registry: string } }) => {
    const org = organizationAccess(request, request.params.org).organization;
    if (!org) throw new HttpError(404, "No organization found");
    return { org, organizationId: org.id, registry: request.params.registry };
  };

  const route = typed(app);

  route.get(
    BASE,
    {
      config: { scope: "read_registries" },
      schema: {
        operationId: "listRegistryTokens",
        summary: "List a package registry's tokens",
        tags,
        params: RegistryParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(RegistryTokenSchema)),
      },
    },
    async (request, reply) => {
      const { org, ...req } = scope(request);
      const paging = pageOf(request.query);
      const res = await clients.registries.listRegistryTokens({ ...req, page: paging.page, perPage: paging.perPage });
      const link = linkHeader(deps.publicUrl, request.url, paging, { total: res.totalCount });
      if (link) reply.header("link", link);
      const registry = res.registry;
      if (!registry) throw new HttpError(404, "No registry found");
      return res.tokens.map((t) => renderRegistryToken(t, registry, org, urls));
    },
  );

  route.get(
    `${BASE}/:token`,
    {
      config: { scope: "read_registries" },
      schema: {
        operationId: "getRegistryToken",
        summary: "Get a registry token (without its secret)",
        tags,
        params: TokenParams,
        response: responses(200, RegistryTokenSchema),
      },
    },
    async (request) => {
      const { org, ...req } = scope(request);
      const res = await clients.registries.getRegistryToken({ ...req, id: request.params.token });
      if (!res.token || !res.registry) throw new HttpError(404, "No token found");
      return renderRegistryToken(res.token, res.registry, org, urls);
    },
  );

  route.post(
    BASE,
    {
      config: { scope: "write_registries" },
      schema: {
        operationId: "createRegistryToken",
        summary: "Create a registry token: the only answer with its secret",
        tags,
        params: RegistryParams,
        body: DescriptionBody,
        response: responses(200, CreatedRegistryTokenSchema),
      },
    },
    async (request) => {
      const { org, ...req } = scope(request);
      const res = await clients.registries.createRegistryToken({
        ...req,
        actorId: request.principal?.user?.id ?? "",
        description: request.body?.description ?? "",
      });
      if (!res.token || !res.registry) throw new HttpError(404, "No token found");
      return { ...renderRegistryToken(res.token, res.registry, org, urls), token: res.secret };
    },
  );

  route.post(
    `${BASE}/:token`,
    {
      config: { scope: "write_registries" },
      schema: {
        operationId: "updateRegistryToken",
        summary: "Update a registry token's description",
        tags,
        params: TokenParams,
        body: DescriptionBody,
        response: responses(200, RegistryTokenSchema),
      },
    },
    async (request) => {
      const { org, ...req } = scope(request);
      const res = await clients.registries.updateRegistryToken({
        ...req,
        actorId: request.principal?.user?.id ?? "",
        id: request.params.token,
        description: request.body?.description ?? "",
      });
      if (!res.token || !res.registry) throw new HttpError(404, "No token found");
      return renderRegistryToken(res.token, res.registry, org, urls);
    },
  );

  route.delete(
    `${BASE}/:token`,
    {
      config: { scope: "write_registries" },
      schema: {
        operationId: "deleteRegistryToken",
        summary: "Delete a registry token (200 with no body, as Buildkite answers)",
        tags,
        params: TokenParams,
        response: responses(200, Type.Unsafe<undefined>({ type: "null", description: "No body" })),
      },
    },
    async (request, reply) => {
      const { org: _org, ...req } = scope(request);
      await clients.registries.deleteRegistryToken({
        ...req,
        actorId: request.principal?.user?.id ?? "",
        id: request.params.token,
      });
      return reply.status(200).send();
    },
  );
}
