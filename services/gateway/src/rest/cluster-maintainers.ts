/**
 * A cluster's maintainers over REST (docs/compatibility.md#clusters-and-queues): the users and teams that may manage
 * the cluster (change it, its queues and its tokens) besides the organization's administrators, who alone add and
 * remove them. Each is `{ id, actor }`, the actor a user (`name`, `email`) or a team (`slug`), as Buildkite answers.
 */
import type { ClusterMaintainer } from "@conveyor/proto/agents";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { graphqlId } from "../render/urls.js";
import { noContent, responses, typed } from "../route-declarations/declare.js";
import { Id, Slug } from "../route-declarations/params.js";
import { onlyFields } from "../route-declarations/unknown-fields.js";
import { CLUSTER, clusterOf, organizationOf, pageOfList } from "./clusters-shared.js";
import { PagingQuery } from "./paging.js";
import type { RouteDeps } from "./route-deps.js";
import { paged } from "./teams-shared.js";

const MAINTAINERS = `${CLUSTER}/maintainers`;
const ClusterParams = Type.Object({ org: Slug, cluster: Id });
const MaintainerParams = Type.Object({ org: Slug, cluster: Id, maintainer: Id });
const tags = ["clusters"];

const MaintainerSchema = Type.Object({
  id: Type.String(),
  actor: Type.Object({
    id: Type.String(),
    graphql_id: Type.String(),
    type: Type.Union([Type.Literal("user"), Type.Literal("team")]),
    name: Type.Optional(Type.String()),
    email: Type.Optional(Type.String()),
    slug: Type.Optional(Type.String()),
  }),
});
const CreateFields = { user: Type.Optional(Id), team: Type.Optional(Id) };

/** The cluster maintainer routes. */
export function clusterMaintainerRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const { clients } = deps;
  const route = typed(app);

  /** A maintainer with its actor's name or slug, read from the identity service (a removed one keeps its id). */
  const render = async (m: ClusterMaintainer, organizationId: string, request: FastifyRequest) => {
    if (m.userId) {
      const { member } = await clients.identity
        .getMember({ organizationId, userId: m.userId })
        .catch(() => ({ member: undefined }));
      const user = member?.user;
      return {
        id: m.id,
        actor: {
          id: m.userId,
          graphql_id: graphqlId("User", m.userId),
          type: "user" as const,
          ...(user ? { name: user.name, email: user.email } : {}),
        },
      };
    }
    const actorId = request.principal?.user?.id ?? "";
    const { team } = await clients.teams
      .getTeam({ organizationId, actorId, teamId: m.teamId })
      .catch(() => ({ team: undefined }));
    return {
      id: m.id,
      actor: {
        id: m.teamId,
        graphql_id: graphqlId("Team", m.teamId),
        type: "team" as const,
        ...(team ? { slug: team.slug } : {}),
      },
    };
  };
  const maintainersOf = async (organizationId: string, clusterId: string) =>
    (await clients.agents.listClusterMaintainers({ organizationId, clusterId })).maintainers;

  route.get(
    MAINTAINERS,
    {
      config: { scope: "read_clusters" },
      schema: {
        operationId: "listClusterMaintainers",
        summary: "List the users and teams that may manage a cluster besides administrators",
        tags,
        params: ClusterParams,
        querystring: PagingQuery,
        response: responses(200, Type.Array(MaintainerSchema)),
      },
    },
    async (request, reply) => {
      const org = organizationOf(request, false);
      const cluster = await clusterOf(deps, org.id, request.params.cluster);
      const maintainers = await maintainersOf(org.id, cluster.id);
      // Paged like every list (a Link header), and only the page's actors are read from the identity service.
      const page = await paged(deps, request, reply, async (n, perPage) => pageOfList(maintainers, n, perPage));
      return Promise.all(page.map((m) => render(m, org.id, request)));
    },
  );

  route.get(
    `${MAINTAINERS}/:maintainer`,
    {
      config: { scope: "read_clusters" },
      schema: {
        operationId: "getClusterMaintainer",
        summary: "Get a maintainer of a cluster",
        tags,
        params: MaintainerParams,
        response: responses(200, MaintainerSchema),
      },
    },
    async (request) => {
      const org = organizationOf(request, false);
      const cluster = await clusterOf(deps, org.id, request.params.cluster);
      const found = (await maintainersOf(org.id, cluster.id)).find((m) => m.id === request.params.maintainer);
      if (!found) throw new HttpError(404, "No maintainer found");
      return render(found, org.id, request);
    },
  );

  route.post(
    MAINTAINERS,
    {
      config: { scope: "write_clusters" },
      preValidation: onlyFields(Object.keys(CreateFields)),
      schema: {
        operationId: "createClusterMaintainer",
        summary: "Make a user or a team (exactly one) a maintainer of a cluster (administrators)",
        tags,
        params: ClusterParams,
        body: Type.Object(CreateFields),
        response: responses(201, MaintainerSchema),
      },
    },
    async (request, reply) => {
      const org = organizationOf(request, true);
      const cluster = await clusterOf(deps, org.id, request.params.cluster);
      const { user, team } = request.body;
      if ((user === undefined) === (team === undefined))
        throw new HttpError(422, "Validation Failed", {
          message: "Validation Failed",
          errors: [{ field: user === undefined ? "user" : "team", code: "exactly one of user and team is required" }],
        });
      const actorId = request.principal?.user?.id ?? "";
      if (user !== undefined) {
        const { member } = await clients.identity
          .getMember({ organizationId: org.id, userId: user })
          .catch(() => ({ member: undefined }));
        if (!member) throw fieldError("user", "is not a member of this organization");
      } else {
        const { team: found } = await clients.teams
          .getTeam({ organizationId: org.id, actorId, teamId: team ?? "" })
          .catch(() => ({ team: undefined }));
        if (!found) throw fieldError("team", "is not a team of this organization");
      }
      const { maintainer } = await clients.agents.addClusterMaintainer({
        organizationId: org.id,
        clusterId: cluster.id,
        userId: user ?? "",
        teamId: team ?? "",
      });
      if (!maintainer) throw new HttpError(500, "The maintainer was not returned");
      return reply.status(201).send(await render(maintainer, org.id, request));
    },
  );

  route.delete(
    `${MAINTAINERS}/:maintainer`,
    {
      config: { scope: "write_clusters" },
      schema: {
        operationId: "deleteClusterMaintainer",
        summary: "Remove a maintainer of a cluster (administrators)",
        tags,
        params: MaintainerParams,
        response: noContent,
      },
    },
    async (request, reply) => {
      const org = organizationOf(request, true);
      const cluster = await clusterOf(deps, org.id, request.params.cluster);
      await clients.agents.removeClusterMaintainer({
        organizationId: org.id,
        clusterId: cluster.id,
        id: request.params.maintainer,
      });
      return reply.status(204).send();
    },
  );
}

const fieldError = (field: string, code: string) =>
  new HttpError(422, "Validation Failed", { message: "Validation Failed", errors: [{ field, code }] });
