/**
 * What the cluster routes share (clusters.ts, cluster-queues.ts, cluster-maintainers.ts): the caller's organization,
 * the cluster a route names, who may manage it, and one page of a list the agents service answers whole.
 */
import type { FastifyRequest } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { isOrganizationAdmin } from "../auth/pipeline-access.js";
import { HttpError } from "../errors/http-error.js";
import type { Urls } from "../render/urls.js";
import type { RouteDeps } from "./route-deps.js";

export const CLUSTERS = "/v2/organizations/:org/clusters";
export const CLUSTER = `${CLUSTERS}/:cluster`;

export const clusterUrl = (urls: Urls, org: string, id: string) => urls.api(`organizations/${org}/clusters/${id}`);

/** One page of a list the agents service answers whole (an organization's clusters, a cluster's tokens or queues). */
export const pageOfList = <T>(all: T[], page: number, perPage: number) => ({
  items: all.slice((page - 1) * perPage, page * perPage),
  totalCount: all.length,
});

type OrgRequest = FastifyRequest & { params: { org: string } };

/** The caller's organization, for an administrator when `admin` (403 otherwise). */
export function organizationOf(request: OrgRequest, admin: boolean) {
  const access = organizationAccess(request, request.params.org);
  if (admin && !isOrganizationAdmin(access)) throw new HttpError(403, "Forbidden");
  return {
    id: access.organization?.id ?? "",
    slug: access.organization?.slug ?? "",
    admin: isOrganizationAdmin(access),
  };
}

/** The cluster a route names, of the caller's organization (404 otherwise). */
export async function clusterOf(deps: RouteDeps, organizationId: string, id: string) {
  const { cluster } = await deps.clients.agents.getCluster({ organizationId, id });
  if (!cluster) throw new HttpError(404, "No cluster found");
  return cluster;
}

/**
 * The cluster a managing route names, for an administrator of the organization or a maintainer of the cluster (the
 * user, or a team they are in): 403 for anyone else, 404 when the organization has no such cluster.
 */
export async function managedCluster(deps: RouteDeps, request: OrgRequest & { params: { cluster: string } }) {
  const org = organizationOf(request, false);
  const cluster = await clusterOf(deps, org.id, request.params.cluster);
  if (org.admin) return { org, cluster };
  const userId = request.principal?.user?.id ?? "";
  const { maintainers } = await deps.clients.agents.listClusterMaintainers({
    organizationId: org.id,
    clusterId: cluster.id,
  });
  if (userId && maintainers.some((m) => m.userId === userId)) return { org, cluster };
  const teamIds = new Set(maintainers.map((m) => m.teamId).filter((id) => id !== ""));
  if (userId && teamIds.size > 0) {
    const { teams } = await deps.clients.teams.listUserTeams({ organizationId: org.id, userId });
    if (teams.some((t) => teamIds.has(t.id))) return { org, cluster };
  }
  throw new HttpError(403, "Forbidden");
}
