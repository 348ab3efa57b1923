/**
 * A cluster's queues over REST (docs/compatibility.md#clusters-and-queues; go-buildkite's `ClusterQueues.List`, `Get`,
 * `Create`, `Update`, `Delete`, `Pause`, `Resume`), on the agents service, which owns them. Reading is every member's;
 * changing is the organization's administrators' and the cluster's maintainers'. Pausing a queue's dispatch keeps its
 * jobs scheduled and offers them to none of its agents until it is resumed.
 */
import { create } from "@bufbuild/protobuf";
import type { ClusterQueue } from "@conveyor/proto/agents";
import type { BuildUser } from "@conveyor/proto/builds";
import { UserSchema as ProtoUserSchema } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { type TSchema, Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { callerOf } from "../auth/authenticate.js";
import { HttpError } from "../errors/http-error.js";
import { graphqlId, type Urls } from "../render/urls.js";
import { renderUser, UserSchema } from "../render/user.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { Id, Slug, text } from "../route-declarations/params.js";
import { onlyFields } from "../route-declarations/unknown-fields.js";
import { CLUSTER, clusterOf, clusterUrl, managedCluster, organizationOf, pageOfList } from "./clusters-shared.js";
import { PagingQuery } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";
import { paged } from "./teams-shared.js";

const QUEUES = `${CLUSTER}/queues`;
const QUEUE = `${QUEUES}/:queue`;
const ClusterParams = Type.Object({ org: Slug, cluster: Id });
const QueueParams = Type.Object({ org: Slug, cluster: Id, queue: Id });
const tags = ["clusters"];

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const QueueSchema = Type.Object({
  id: Type.String(),
  graphql_id: Type.String(),
  key: Type.String(),
  description: Type.String(),
  url: Type.String(),
  web_url: Type.String(),
  cluster_url: Type.String(),
  hosted: Type.Boolean(),
  dispatch_paused: Type.Boolean(),
  dispatch_paused_by: Nullable(UserSchema),
  dispatch_paused_at: Nullable(Type.String()),
  dispatch_paused_note: Nullable(Type.String()),
  created_at: Nullable(Type.String()),
  created_by: Nullable(UserSchema),
});

const userOf = (u: BuildUser | undefined) => {
  if (!u?.id) return null;
  const { id, name, email, avatarUrl, createdAt } = u;
  return renderUser(create(ProtoUserSchema, { id, name, email, avatarUrl, ...(createdAt ? { createdAt } : {}) }));
};

function renderQueue(q: ClusterQueue, urls: Urls, org: string) {
  const cluster = clusterUrl(urls, org, q.clusterId);
  return {
    id: q.id,
    graphql_id: graphqlId("ClusterQueue", q.id),
    key: q.key,
    description: q.description,
    url: `${cluster}/queues/${q.id}`,
    web_url: urls.web(`organizations/${org}/clusters/${q.clusterId}/queues/${q.id}`),
    cluster_url: cluster,
    hosted: false,
    dispatch_paused: q.dispatchPaused,
    dispatch_paused_by: q.dispatchPaused ? userOf(q.dispatchPausedBy) : null,
    dispatch_paused_at: q.dispatchPaused ? (isoTime(q.dispatchPausedAt) ?? null) : null,
    dispatch_paused_note: q.dispatchPaused ? q.dispatchPausedNote || null : null,
    created_at: isoTime(q.createdAt) ?? null,
    created_by: userOf(q.createdBy),
  };
}

const Description = text(1000);
const CreateFields = { key: text(100, { minLength: 1 }), description: Type.Optional(Description) };
const UpdateFields = { description: Type.Optional(Description) };
const PauseFields = { dispatch_paused_note: Type.Optional(text(1000)) };

/** The cluster queue routes. */
export function clusterQueueRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients, urls } = deps;
  const route = typed(app);
  /** The queue a route names, of the cluster (404 otherwise). */
  const queueOf = async (organizationId: string, clusterId: string, id: string) => {
    const { queue } = await clients.agents.getClusterQueue({ organizationId, clusterId, id });
    if (!queue) throw new HttpError(404, "No queue found");
    return queue;
  };

  route.get(
    QUEUES,
    {
      config: { scope: "read_clusters" },
      schema: {
        operationId: "listClusterQueues",
        summary: "List a cluster's queues, by key",
        tags,
        params: ClusterParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(QueueSchema)),
      },
    },
    async (request, reply) => {
      const org = organizationOf(request, false);
      const cluster = await clusterOf(deps, org.id, request.params.cluster);
      const { queues } = await clients.agents.listClusterQueues({ organizationId: org.id, clusterId: cluster.id });
      const page = await paged(deps, request, reply, async (n, perPage) => pageOfList(queues, n, perPage));
      return page.map((q) => renderQueue(q, urls, org.slug));
    },
  );

  route.get(
    QUEUE,
    {
      config: { scope: "read_clusters" },
      schema: {
        operationId: "getClusterQueue",
        summary: "Get a queue of a cluster",
        tags,
        params: QueueParams,
        response: responses(200, QueueSchema),
      },
    },
    async (request) => {
      const org = organizationOf(request, false);
      const cluster = await clusterOf(deps, org.id, request.params.cluster);
      return renderQueue(await queueOf(org.id, cluster.id, request.params.queue), urls, org.slug);
    },
  );

  route.post(
    QUEUES,
    {
      config: { scope: "write_clusters" },
      preValidation: onlyFields(Object.keys(CreateFields)),
      schema: {
        operationId: "createClusterQueue",
        summary: "Create a queue in a cluster (administrators and the cluster's maintainers); its key is unique in it",
        tags,
        params: ClusterParams,
        body: Type.Object(CreateFields),
        response: responses(201, QueueSchema),
      },
    },
    async (request, reply) => {
      const { org, cluster } = await managedCluster(deps, request);
      const { queue } = await clients.agents.createClusterQueue({
        organizationId: org.id,
        clusterId: cluster.id,
        key: request.body.key,
        description: request.body.description ?? "",
        createdBy: callerOf(request),
      });
      if (!queue) throw new HttpError(500, "The queue was not returned");
      return reply.status(201).send(renderQueue(queue, urls, org.slug));
    },
  );

  route.patch(
    QUEUE,
    {
      config: { scope: "write_clusters" },
      preValidation: onlyFields(Object.keys(UpdateFields)),
      schema: {
        operationId: "updateClusterQueue",
        summary: "Change a queue's description (administrators and the cluster's maintainers); its key is fixed",
        tags,
        params: QueueParams,
        body: Type.Object(UpdateFields),
        response: responses(200, QueueSchema),
      },
    },
    async (request) => {
      const { org, cluster } = await managedCluster(deps, request);
      const { description } = request.body;
      const { queue } = await clients.agents.updateClusterQueue({
        organizationId: org.id,
        clusterId: cluster.id,
        id: request.params.queue,
        ...(description !== undefined ? { description } : {}),
      });
      if (!queue) throw new HttpError(404, "No queue found");
      return renderQueue(queue, urls, org.slug);
    },
  );

  route.delete(
    QUEUE,
    {
      config: { scope: "write_clusters" },
      schema: {
        operationId: "deleteClusterQueue",
        summary: "Delete a queue no connected agent is in (administrators and the cluster's maintainers)",
        tags,
        params: QueueParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      const { org, cluster } = await managedCluster(deps, request);
      await clients.agents.deleteClusterQueue({
        organizationId: org.id,
        clusterId: cluster.id,
        id: request.params.queue,
      });
      return reply.status(204).send();
    },
  );

  route.post(
    `${QUEUE}/pause_dispatch`,
    {
      config: { scope: "write_clusters" },
      preValidation: onlyFields(Object.keys(PauseFields)),
      schema: {
        operationId: "pauseClusterQueueDispatch",
        summary: "Pause dispatch to a queue: its jobs stay scheduled and no agent is offered them until it is resumed",
        tags,
        params: QueueParams,
        body: Type.Union([Type.Object(PauseFields), Type.Null()]),
        response: responses(200, QueueSchema),
      },
    },
    async (request) => {
      const { org, cluster } = await managedCluster(deps, request);
      const { queue } = await clients.agents.pauseClusterQueue({
        organizationId: org.id,
        clusterId: cluster.id,
        id: request.params.queue,
        note: request.body?.dispatch_paused_note ?? "",
        pausedBy: callerOf(request),
      });
      if (!queue) throw new HttpError(404, "No queue found");
      return renderQueue(queue, urls, org.slug);
    },
  );

  route.post(
    `${QUEUE}/resume_dispatch`,
    {
      config: { scope: "write_clusters" },
      schema: {
        operationId: "resumeClusterQueueDispatch",
        summary: "Resume dispatch to a paused queue: its jobs are offered to its agents at once",
        tags,
        params: QueueParams,
        response: responses(200, QueueSchema),
      },
    },
    async (request) => {
      const { org, cluster } = await managedCluster(deps, request);
      const { queue } = await clients.agents.resumeClusterQueue({
        organizationId: org.id,
        clusterId: cluster.id,
        id: request.params.queue,
      });
      if (!queue) throw new HttpError(404, "No queue found");
      return renderQueue(queue, urls, org.slug);
    },
  );
}
