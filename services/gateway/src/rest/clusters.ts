/**
 * Clusters and their agent tokens over REST (docs/compatibility.md#clusters-and-queues; go-buildkite's
 * `Clusters.List`, `Get`, `Create`, `Update`, `Delete` and `ClusterTokens.List`, `Get`, `Create`, `Update`, `Delete`), on
 * the agents service, which owns clusters and agent tokens. Creating and deleting a cluster are the organization's
 * administrators'; changing it and its tokens are theirs and the cluster's maintainers' (cluster-maintainers.ts). A token's
 * value is answered by its create alone; a revoked token stops registering agents at once (the agents service's
 * `credential_revoked` event drops it from every gateway's cache).
 */
import type { AgentToken, Cluster } from "@conveyor/proto/agents";
import { isoTime } from "@conveyor/runtime";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { graphqlId, type Urls } from "../render/urls.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { BOUNDS, Id, OrgParams, Slug, text } from "../route-declarations/params.js";
import { onlyFields } from "../route-declarations/unknown-fields.js";
import {
  CLUSTER,
  CLUSTERS,
  clusterOf as clusterIn,
  clusterUrl,
  managedCluster,
  organizationOf,
  pageOfList,
} from "./clusters-shared.js";
import { PagingQuery } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";
import { paged } from "./teams-shared.js";

const ClusterParams = Type.Object({ org: Slug, cluster: Id });
const TokenParams = Type.Object({ org: Slug, cluster: Id, token: Id });
const tags = ["clusters"];

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const ClusterSchema = Type.Object({
  id: Type.String(),
  graphql_id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  emoji: Type.Null(),
  color: Type.Null(),
  default_queue_id: Type.Null(),
  url: Type.String(),
  web_url: Type.String(),
  queues_url: Type.String(),
  default_queue_url: Type.Null(),
  created_at: Nullable(Type.String()),
  created_by: Type.Null(),
});
const TokenSchema = Type.Object({
  id: Type.String(),
  graphql_id: Type.String(),
  description: Type.String(),
  allowed_ip_addresses: Type.Null(),
  url: Type.String(),
  cluster_url: Type.String(),
  created_at: Nullable(Type.String()),
  created_by: Type.Null(),
  token: Type.Optional(Type.String({ description: "the secret, in the create's answer only" })),
});

function renderCluster(c: Cluster, urls: Urls, org: string) {
  const url = clusterUrl(urls, org, c.id);
  return {
    id: c.id,
    graphql_id: graphqlId("Cluster", c.id),
    name: c.name,
    description: c.description,
    emoji: null,
    color: null,
    default_queue_id: null,
    url,
    web_url: urls.web(`organizations/${org}/clusters/${c.id}`),
    queues_url: `${url}/queues`,
    default_queue_url: null,
    created_at: isoTime(c.createdAt),
    created_by: null,
  };
}

function renderToken(t: AgentToken, urls: Urls, org: string, secret?: string) {
  const cluster = clusterUrl(urls, org, t.clusterId);
  return {
    id: t.id,
    graphql_id: graphqlId("ClusterToken", t.id),
    description: t.description,
    allowed_ip_addresses: null,
    url: `${cluster}/tokens/${t.id}`,
    cluster_url: cluster,
    created_at: isoTime(t.createdAt),
    created_by: null,
    ...(secret ? { token: secret } : {}),
  };
}

const ClusterFields = { name: text(BOUNDS.name, { minLength: 1 }), description: Type.Optional(text(1000)) };
const TokenFields = { description: text(1000, { minLength: 1 }) };
/** A token's update: its description; Buildkite's allowed_ip_addresses is refused by name (not honoured here). */
const TokenUpdateFields = { description: Type.Optional(TokenFields.description) };

/** The clusters and cluster token routes. */
export function clusterRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;
  const route = typed(app);

  /** The cluster a route names, of the caller's organization (404 otherwise). */
  const clusterOf = (organizationId: string, id: string) => clusterIn(deps, organizationId, id);
  /** The active tokens of a cluster. */
  const tokensOf = async (organizationId: string, clusterId: string) =>
    (await clients.agents.listAgentTokens({ organizationId, clusterId })).tokens.filter((t) => !t.revokedAt);

  route.get(
    CLUSTERS,
    {
      config: { scope: "read_clusters" },
      schema: {
        operationId: "listClusters",
        summary: "List the organization's clusters",
        tags,
        params: OrgParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(ClusterSchema)),
      },
    },
    async (request, reply) => {
      const org = organizationOf(request, false);
      const { clusters } = await clients.agents.listClusters({ organizationId: org.id });
      const page = await paged(deps, request, reply, async (n, perPage) => pageOfList(clusters, n, perPage));
      return page.map((c) => renderCluster(c, urls, org.slug));
    },
  );

  route.post(
    CLUSTERS,
    {
      config: { scope: "write_clusters" },
      preValidation: onlyFields(Object.keys(ClusterFields)),
      schema: {
        operationId: "createCluster",
        summary: "Create a cluster (administrators)",
        tags,
        params: OrgParams,
        body: Type.Object(ClusterFields),
        response: responses(201, ClusterSchema),
      },
    },
    async (request, reply) => {
      const org = organizationOf(request, true);
      const { cluster } = await clients.agents.createCluster({
        organizationId: org.id,
        name: request.body.name,
        description: request.body.description ?? "",
      });
      if (!cluster) throw new HttpError(500, "The cluster was not returned");
      return reply.status(201).send(renderCluster(cluster, urls, org.slug));
    },
  );

  route.get(
    CLUSTER,
    {
      config: { scope: "read_clusters" },
      schema: {
        operationId: "getCluster",
        summary: "Get a cluster",
        tags,
        params: ClusterParams,
        response: responses(200, ClusterSchema),
      },
    },
    async (request) => {
      const org = organizationOf(request, false);
      return renderCluster(await clusterOf(org.id, request.params.cluster), urls, org.slug);
    },
  );

  route.patch(
    CLUSTER,
    {
      config: { scope: "write_clusters" },
      preValidation: onlyFields(Object.keys(ClusterFields)),
      schema: {
        operationId: "updateCluster",
        summary: "Change a cluster's name or description (administrators); absent fields are kept",
        tags,
        params: ClusterParams,
        body: Type.Object({ ...ClusterFields, name: Type.Optional(ClusterFields.name) }),
        response: responses(200, ClusterSchema),
      },
    },
    async (request) => {
      const { org, cluster: found } = await managedCluster(deps, request);
      const { name, description } = request.body;
      const { cluster } = await clients.agents.updateCluster({
        organizationId: org.id,
        id: found.id,
        ...(name !== undefined ? { name } : {}),
        ...(description !== undefined ? { description } : {}),
      });
      if (!cluster) throw new HttpError(404, "No cluster found");
      return renderCluster(cluster, urls, org.slug);
    },
  );

  route.get(
    `${CLUSTER}/tokens`,
    {
      config: { scope: "read_clusters" },
      schema: {
        operationId: "listClusterTokens",
        summary: "List a cluster's active agent tokens (never their values)",
        tags,
        params: ClusterParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(TokenSchema)),
      },
    },
    async (request, reply) => {
      const org = organizationOf(request, false);
      const cluster = await clusterOf(org.id, request.params.cluster);
      const tokens = await tokensOf(org.id, cluster.id);
      const page = await paged(deps, request, reply, async (n, perPage) => pageOfList(tokens, n, perPage));
      return page.map((t) => renderToken(t, urls, org.slug));
    },
  );

  route.get(
    `${CLUSTER}/tokens/:token`,
    {
      config: { scope: "read_clusters" },
      schema: {
        operationId: "getClusterToken",
        summary: "Get an active agent token of a cluster (never its value)",
        tags,
        params: TokenParams,
        response: responses(200, TokenSchema),
      },
    },
    async (request) => {
      const org = organizationOf(request, false);
      const cluster = await clusterOf(org.id, request.params.cluster);
      const token = (await tokensOf(org.id, cluster.id)).find((t) => t.id === request.params.token);
      if (!token) throw new HttpError(404, "No token found");
      return renderToken(token, urls, org.slug);
    },
  );

  route.post(
    `${CLUSTER}/tokens`,
    {
      config: { scope: "write_clusters" },
      preValidation: onlyFields(Object.keys(TokenFields)),
      schema: {
        operationId: "createClusterToken",
        summary: "Create an agent token of a cluster (administrators): its value is in this answer only",
        tags,
        params: ClusterParams,
        body: Type.Object(TokenFields),
        response: responses(201, TokenSchema),
      },
    },
    async (request, reply) => {
      const { org, cluster } = await managedCluster(deps, request);
      const res = await clients.agents.createAgentToken({
        organizationId: org.id,
        clusterId: cluster.id,
        description: request.body.description,
      });
      if (!res.token) throw new HttpError(500, "The token was not returned");
      return reply.status(201).send(renderToken(res.token, urls, org.slug, res.secret));
    },
  );

  route.delete(
    `${CLUSTER}/tokens/:token`,
    {
      config: { scope: "write_clusters" },
      schema: {
        operationId: "deleteClusterToken",
        summary: "Revoke an agent token of a cluster (administrators): agents can no longer register with it",
        tags,
        params: TokenParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      const { org, cluster } = await managedCluster(deps, request);
      const token = (await tokensOf(org.id, cluster.id)).find((t) => t.id === request.params.token);
      if (!token) throw new HttpError(404, "No token found");
      await clients.agents.revokeAgentToken({ organizationId: org.id, id: token.id });
      return reply.status(204).send();
    },
  );

  for (const [method, operationId] of [
    ["PATCH", "updateClusterToken"],
    ["PUT", "updateClusterTokenPut"],
  ] as const) {
    route.route({
      method,
      url: `${CLUSTER}/tokens/:token`,
      config: { scope: "write_clusters" },
      preValidation: onlyFields(Object.keys(TokenUpdateFields)),
      schema: {
        operationId,
        summary: "Change an agent token's description (administrators and the cluster's maintainers)",
        tags,
        params: TokenParams,
        body: Type.Object(TokenUpdateFields),
        response: responses(200, TokenSchema),
      },
      handler: async (request) => {
        const { org, cluster } = await managedCluster(deps, request);
        const token = (await tokensOf(org.id, cluster.id)).find((t) => t.id === request.params.token);
        if (!token) throw new HttpError(404, "No token found");
        const { description } = request.body;
        const updated = await clients.agents.updateAgentToken({
          organizationId: org.id,
          id: token.id,
          ...(description !== undefined ? { description } : {}),
        });
        if (!updated.token) throw new HttpError(404, "No token found");
        return renderToken(updated.token, urls, org.slug);
      },
    });
  }

  route.delete(
    CLUSTER,
    {
      config: { scope: "write_clusters" },
      schema: {
        operationId: "deleteCluster",
        summary:
          "Delete a cluster (administrators) once no pipeline names it and it has no queues and no connected agents; its agent tokens are revoked",
        tags,
        params: ClusterParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      const org = organizationOf(request, true);
      const cluster = await clusterOf(org.id, request.params.cluster);
      await clients.agents.deleteCluster({ organizationId: org.id, id: cluster.id });
      return reply.status(204).send();
    },
  );
}
