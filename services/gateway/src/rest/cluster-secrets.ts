/**
 * A cluster's secrets over REST (docs/compatibility.md#cluster-secrets; go-buildkite's `ClusterSecrets.List`, `Get`,
 * `Create`, `Update`, `UpdateValue`, `Delete`), on the agents service's SecretsService, which owns them. They are the
 * organization's administrators' and the cluster's maintainers' to read and manage (clusters-shared.ts). A value is
 * taken by the create and `PUT …/value` alone and answered by nothing; `GET …/secrets/{id}/reads` (this project's
 * extension) lists the latest reads by jobs, allowed or refused.
 */
import type { ClusterSecret, SecretActor, SecretRead } from "@conveyor/proto/secrets";
import { isoTime } from "@conveyor/runtime";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { graphqlId, type Urls } from "../render/urls.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { Id, Slug, text } from "../route-declarations/params.js";
import { onlyFields, refuseUnknownFields } from "../route-declarations/unknown-fields.js";
import { CLUSTER, clusterUrl, managedCluster, pageOfList } from "./clusters-shared.js";
import { PagingQuery } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";
import { paged } from "./teams-shared.js";

const SECRETS = `${CLUSTER}/secrets`;
const SECRET = `${SECRETS}/:secret`;
const ClusterParams = Type.Object({ org: Slug, cluster: Id });
const SecretParams = Type.Object({ org: Slug, cluster: Id, secret: Id });
const tags = ["clusters"];
const read = { scope: "read_secret_details" } as const;
const write = { scope: "write_secrets" } as const;

const Actor = Type.Union([Type.Object({ id: Type.String(), name: Type.String(), email: Type.String() }), Type.Null()]);
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const SecretSchema = Type.Object({
  id: Type.String(),
  graphql_id: Type.String(),
  key: Type.String(),
  description: Type.String(),
  policy: Type.String(),
  url: Type.String(),
  cluster_url: Type.String(),
  created_at: Nullable(Type.String()),
  created_by: Actor,
  updated_at: Nullable(Type.String()),
  updated_by: Actor,
  last_read_at: Nullable(Type.String()),
  organization: Type.Object({ id: Type.String(), slug: Type.String(), url: Type.String(), web_url: Type.String() }),
});
const ReadSchema = Type.Object({
  id: Type.String(),
  key: Type.String(),
  job_id: Type.String(),
  build_id: Type.String(),
  agent_id: Type.String(),
  pipeline_slug: Type.String(),
  branch: Type.String(),
  allowed: Type.Boolean(),
  reason: Type.String(),
  read_at: Nullable(Type.String()),
});

/** The longest value the route takes before the service checks its bytes (8 KiB of UTF-8 is at most 8,192 characters). */
const Value = text(8 * 1024, { description: "the secret's value: never answered" });
const Policy = text(10_000, { description: "the access policy (YAML): a list of rules of claims" });
const Description = text(1000);
const CreateFields = {
  key: text(255, { minLength: 1 }),
  value: Type.Optional(Value),
  description: Type.Optional(Description),
  policy: Type.Optional(Policy),
};
const UpdateFields = { description: Type.Optional(Description), policy: Type.Optional(Policy) };
const ValueFields = { value: Value };

/** Buildkite's words for the fields an update of description and policy does not take. */
const NOT_UPDATED: Record<string, string> = {
  key: "The key parameter cannot be updated.",
  value: "The value parameter cannot be updated on this endpoint.",
};

function renderSecret(s: ClusterSecret, urls: Urls, org: { id: string; slug: string }) {
  const cluster = clusterUrl(urls, org.slug, s.clusterId);
  const actor = (a: SecretActor | undefined) => (a ? { id: a.id, name: a.name, email: a.email } : null);
  return {
    id: s.id,
    graphql_id: graphqlId("Secret", s.id),
    key: s.key,
    description: s.description,
    policy: s.policy,
    url: `${cluster}/secrets/${s.id}`,
    cluster_url: cluster,
    created_at: isoTime(s.createdAt),
    created_by: actor(s.createdBy),
    updated_at: isoTime(s.updatedAt),
    updated_by: actor(s.updatedBy),
    last_read_at: isoTime(s.lastReadAt),
    organization: {
      id: org.id,
      slug: org.slug,
      url: urls.api(`organizations/${org.slug}`),
      web_url: urls.web(org.slug),
    },
  };
}

const renderRead = (r: SecretRead) => ({
  id: r.id,
  key: r.key,
  job_id: r.jobId,
  build_id: r.buildId,
  agent_id: r.agentId,
  pipeline_slug: r.pipelineSlug,
  branch: r.branch,
  allowed: r.allowed,
  reason: r.reason,
  read_at: isoTime(r.readAt),
});

/** The user acting, as the secret records them (created_by, updated_by). */
const actorOf = (request: FastifyRequest) => {
  const user = request.principal?.user;
  return user ? { id: user.id, name: user.name, email: user.email } : undefined;
};

/** The cluster secret routes. */
export function clusterSecretRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;
  const route = typed(app);
  const ids = (org: { id: string }, cluster: { id: string }, id?: string) => ({
    organizationId: org.id,
    clusterId: cluster.id,
    ...(id !== undefined ? { id } : {}),
  });

  route.get(
    SECRETS,
    {
      config: read,
      schema: {
        operationId: "listClusterSecrets",
        summary: "List a cluster's secrets, never their values (administrators and the cluster's maintainers)",
        tags,
        params: ClusterParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(SecretSchema)),
      },
    },
    async (request, reply) => {
      const { org, cluster } = await managedCluster(deps, request);
      const { secrets } = await clients.secrets.listClusterSecrets(ids(org, cluster));
      const page = await paged(deps, request, reply, async (n, perPage) => pageOfList(secrets, n, perPage));
      return page.map((s) => renderSecret(s, urls, org));
    },
  );

  route.get(
    SECRET,
    {
      config: read,
      schema: {
        operationId: "getClusterSecret",
        summary: "Get a cluster's secret, never its value (administrators and the cluster's maintainers)",
        tags,
        params: SecretParams,
        response: responses(200, SecretSchema),
      },
    },
    async (request) => {
      const { org, cluster } = await managedCluster(deps, request);
      const { secret } = await clients.secrets.getClusterSecret(ids(org, cluster, request.params.secret));
      if (!secret) throw new HttpError(404, "No secret found");
      return renderSecret(secret, urls, org);
    },
  );

  route.post(
    SECRETS,
    {
      config: write,
      preValidation: onlyFields(Object.keys(CreateFields)),
      schema: {
        operationId: "createClusterSecret",
        summary: "Create a secret in a cluster (administrators and the cluster's maintainers)",
        tags,
        params: ClusterParams,
        body: Type.Object(CreateFields),
        response: responses(201, SecretSchema),
      },
    },
    async (request, reply) => {
      const { org, cluster } = await managedCluster(deps, request);
      const { key, value, description, policy } = request.body;
      const { secret } = await clients.secrets.createClusterSecret({
        ...ids(org, cluster),
        key,
        value: value ?? "",
        description: description ?? "",
        policy: policy ?? "",
        actor: actorOf(request),
      });
      if (!secret) throw new HttpError(500, "The secret was not returned");
      return reply.status(201).send(renderSecret(secret, urls, org));
    },
  );

  route.put(
    SECRET,
    {
      config: write,
      preValidation: async (request) => {
        const body = request.body;
        if (typeof body === "object" && body !== null) {
          const refused = Object.keys(body).find((k) => NOT_UPDATED[k] !== undefined);
          if (refused) throw new HttpError(422, NOT_UPDATED[refused] ?? "");
        }
        refuseUnknownFields(body, Object.keys(UpdateFields));
      },
      schema: {
        operationId: "updateClusterSecret",
        summary:
          "Change a secret's description or access policy (administrators and maintainers); absent fields are kept",
        tags,
        params: SecretParams,
        body: Type.Object(UpdateFields),
        response: responses(200, SecretSchema),
      },
    },
    async (request) => {
      const { org, cluster } = await managedCluster(deps, request);
      const { description, policy } = request.body;
      const { secret } = await clients.secrets.updateClusterSecret({
        ...ids(org, cluster, request.params.secret),
        ...(description !== undefined ? { description } : {}),
        ...(policy !== undefined ? { policy } : {}),
        actor: actorOf(request),
      });
      if (!secret) throw new HttpError(404, "No secret found");
      return renderSecret(secret, urls, org);
    },
  );

  route.put(
    `${SECRET}/value`,
    {
      config: write,
      preValidation: onlyFields(Object.keys(ValueFields)),
      schema: {
        operationId: "updateClusterSecretValue",
        summary: "Replace a secret's value (administrators and the cluster's maintainers); the value is never answered",
        tags,
        params: SecretParams,
        body: Type.Object(ValueFields),
        response: responses(200, SecretSchema),
      },
    },
    async (request) => {
      const { org, cluster } = await managedCluster(deps, request);
      const { secret } = await clients.secrets.updateClusterSecretValue({
        ...ids(org, cluster, request.params.secret),
        value: request.body.value,
        actor: actorOf(request),
      });
      if (!secret) throw new HttpError(404, "No secret found");
      return renderSecret(secret, urls, org);
    },
  );

  route.delete(
    SECRET,
    {
      config: write,
      schema: {
        operationId: "deleteClusterSecret",
        summary: "Delete a cluster's secret and its reads (administrators and the cluster's maintainers)",
        tags,
        params: SecretParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      const { org, cluster } = await managedCluster(deps, request);
      await clients.secrets.deleteClusterSecret(ids(org, cluster, request.params.secret));
      return reply.status(204).send();
    },
  );

  route.get(
    `${SECRET}/reads`,
    {
      config: read,
      schema: {
        operationId: "listClusterSecretReads",
        summary: "The latest reads of a secret by jobs, allowed or refused, newest first (this project's extension)",
        tags,
        params: SecretParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(ReadSchema)),
      },
    },
    async (request, reply) => {
      const { org, cluster } = await managedCluster(deps, request);
      const { reads } = await clients.secrets.listClusterSecretReads(ids(org, cluster, request.params.secret));
      const page = await paged(deps, request, reply, async (n, perPage) => pageOfList(reads, n, perPage));
      return page.map(renderRead);
    },
  );
}
