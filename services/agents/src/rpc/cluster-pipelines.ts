import { ArchiveFilter, PipelinesService } from "@conveyor/proto/pipelines";
import { createServiceClient } from "@conveyor/runtime";
import type { ClusterPipelines } from "../domain/cluster-deletion.js";

/**
 * A cluster's pipelines, archived ones included, asked of the pipelines service (ListPipelines by cluster): the first
 * `limit` by name, and how many there are. Asked only when a cluster is deleted.
 */
export function clusterPipelinesFrom(
  pipelinesUrl: string,
): (organizationId: string, clusterId: string, limit: number) => Promise<ClusterPipelines> {
  const pipelines = createServiceClient(PipelinesService, pipelinesUrl);
  return async (organizationId, clusterId, limit) => {
    const page = await pipelines.listPipelines({
      organizationId,
      clusterId,
      archiveFilter: ArchiveFilter.ALL,
      page: 1,
      perPage: limit,
    });
    return { slugs: page.pipelines.map((p) => p.slug), total: page.totalCount };
  };
}
