import { Code, ConnectError } from "@connectrpc/connect";
import { AgentsService } from "@conveyor/proto/agents";
import { createServiceClient } from "@conveyor/runtime";
import { type ListQueues, QUEUE_IDS_TIMEOUT_MS } from "./cluster-queue-ids.js";

/** A cluster's queues, asked of the agents service (ListClusterQueues); a cluster it does not know has none. */
export function agentsQueueList(agentsUrl: string): ListQueues {
  const agents = createServiceClient(AgentsService, agentsUrl, { timeoutMs: QUEUE_IDS_TIMEOUT_MS });
  return async (organizationId, clusterId) => {
    try {
      return (await agents.listClusterQueues({ organizationId, clusterId })).queues;
    } catch (err) {
      if (ConnectError.from(err).code === Code.NotFound) return [];
      throw err;
    }
  };
}
