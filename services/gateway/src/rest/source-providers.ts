import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { isOrganizationAdmin } from "../auth/pipeline-access.js";
import { HttpError } from "../errors/http-error.js";
import { renderSourceProvider, SourceProviderSchema } from "../render/source-provider.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, Id, OrgParams, Slug, text } from "../route-declarations/params.js";
import { PagingQuery, pageOfWhole } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";

const ProviderParams = Type.Object({ org: Slug, id: Id });
const tags = ["source providers"];

/** What a new connection is (the notifications service judges the values and names a wrong field in a 422). */
const CreateBodySchema = Type.Object(
  {
    kind: text(BOUNDS.name, { description: "github, github_enterprise, gitlab, bitbucket or gitea (also Forgejo)" }),
    api_url: Type.Optional(
      text(512, { description: "the API base URL; default the public service's for github, gitlab and bitbucket" }),
    ),
    token: Type.Optional(
      text(4096, { description: "an access token (Bitbucket: also username:app-password); never shown again" }),
    ),
    app_id: Type.Optional(
      text(20, { description: "github, github_enterprise: a GitHub App's id, instead of a token" }),
    ),
    private_key: Type.Optional(text(8192, { description: "the GitHub App's private key (PEM); never shown again" })),
    description: Type.Optional(text(255)),
  },
  { additionalProperties: false },
);

/** A field this route does not take is refused (422 naming it), never ignored. */
function refuseUnknownFields(body: unknown): void {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return;
  const known = Object.keys(CreateBodySchema.properties);
  const unknown = Object.keys(body).filter((k) => !known.includes(k));
  if (unknown.length === 0) return;
  throw new HttpError(422, "Validation Failed", {
    message: "Validation Failed",
    errors: unknown.slice(0, 20).map((field) => ({ field, code: "is not taken" })),
  });
}

/**
 * An organization's source-provider connections (docs/statuses.md#connections; this project's extension, Buildkite
 * has none): the forges whose commit statuses builds set. Administrators of the organization only; a token is taken
 * and never answered.
 */
export function sourceProviderRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;
  /** The organization's id, when the caller administers it (a member gets 403, anyone else 404). */
  const adminOf = (request: FastifyRequest, org: string) => {
    const access = organizationAccess(request, org);
    if (!isOrganizationAdmin(access)) throw new HttpError(403, "Forbidden");
    return access.organization?.id ?? "";
  };
  const route = typed(app);

  route.get(
    "/v2/organizations/:org/source_providers",
    {
      config: { scope: "read_notification_services" },
      schema: {
        operationId: "listSourceProviders",
        summary: "List the organization's source-provider connections, oldest first (administrators)",
        tags,
        params: OrgParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(SourceProviderSchema)),
      },
    },
    async (request, reply) => {
      const organizationId = adminOf(request, request.params.org);
      const res = await clients.sourceProviders.listSourceProviders({ organizationId });
      const page = pageOfWhole(res.sourceProviders, request.query, request, reply, deps.publicUrl);
      return page.map((p) => renderSourceProvider(p, urls, request.params.org));
    },
  );

  route.get(
    "/v2/organizations/:org/source_providers/:id",
    {
      config: { scope: "read_notification_services" },
      schema: {
        operationId: "getSourceProvider",
        summary: "Get a source-provider connection (administrators)",
        tags,
        params: ProviderParams,
        response: responses(200, SourceProviderSchema),
      },
    },
    async (request) => {
      const organizationId = adminOf(request, request.params.org);
      const res = await clients.sourceProviders.getSourceProvider({ organizationId, id: request.params.id });
      if (!res.sourceProvider) throw new HttpError(404, "No source provider found");
      return renderSourceProvider(res.sourceProvider, urls, request.params.org);
    },
  );

  route.post(
    "/v2/organizations/:org/source_providers",
    {
      config: { scope: "write_notification_services" },
      preValidation: async (request) => refuseUnknownFields(request.body),
      schema: {
        operationId: "createSourceProvider",
        summary: "Connect a forge: its kind, API URL and token (administrators)",
        tags,
        params: OrgParams,
        body: CreateBodySchema,
        response: responses(201, SourceProviderSchema),
      },
    },
    async (request, reply) => {
      const organizationId = adminOf(request, request.params.org);
      const body = request.body;
      const res = await clients.sourceProviders.createSourceProvider({
        organizationId,
        kind: body.kind,
        apiUrl: body.api_url ?? "",
        token: body.token ?? "",
        appId: body.app_id ?? "",
        privateKey: body.private_key ?? "",
        description: body.description ?? "",
        createdBy: request.principal?.user?.id ?? "",
      });
      if (!res.sourceProvider) throw new HttpError(404, "No source provider found");
      return reply.status(201).send(renderSourceProvider(res.sourceProvider, urls, request.params.org));
    },
  );

  route.delete(
    "/v2/organizations/:org/source_providers/:id",
    {
      config: { scope: "write_notification_services" },
      schema: {
        operationId: "deleteSourceProvider",
        summary: "Remove a source-provider connection (administrators)",
        tags,
        params: ProviderParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      const organizationId = adminOf(request, request.params.org);
      await clients.sourceProviders.deleteSourceProvider({ organizationId, id: request.params.id });
      return reply.status(204).send();
    },
  );
}
