import type { ServiceImpl } from "@connectrpc/connect";
import type { AgentsService } from "@conveyor/proto/agents";
import type { BuildUser } from "@conveyor/proto/builds";
import { alreadyExists, failedPrecondition, invalidFields, isUuid, newId, notFound } from "@conveyor/runtime";
import { MAX_QUEUE_TEXT, queueKeyProblem } from "../domain/cluster-queues.js";
import type { QueueDirectory } from "../queues/queue-directory.js";
import type { AgentRepository } from "../store/agent-repository.js";
import type { ClusterRepository } from "../store/cluster-repository.js";
import {
  DuplicateQueueError,
  MAX_QUEUES_PER_CLUSTER,
  type QueueDoc,
  type QueueRepository,
  type QueueUserRef,
} from "../store/queue-repository.js";
import { queueMessage } from "./agent-message.js";

export interface QueueRpcsDeps {
  clusters: ClusterRepository;
  queues: QueueRepository;
  agents: Pick<AgentRepository, "countAgents">;
  directory: QueueDirectory;
  now: () => Date;
  /** Called once a queue's dispatch resumed (its idle agents are told, so streaming ones ask at once). */
  resumed?: (queue: QueueDoc) => Promise<void>;
}

type QueueRpcs = Pick<
  ServiceImpl<typeof AgentsService>,
  | "createClusterQueue"
  | "getClusterQueue"
  | "listClusterQueues"
  | "updateClusterQueue"
  | "deleteClusterQueue"
  | "pauseClusterQueue"
  | "resumeClusterQueue"
>;

const userRef = (u: BuildUser | undefined): QueueUserRef | null =>
  u?.id ? { id: u.id, name: u.name, email: u.email, avatarUrl: u.avatarUrl } : null;

const checkText = (field: string, text: string) => {
  if (text.length > MAX_QUEUE_TEXT)
    throw invalidFields([{ field, code: `is too long (maximum is ${MAX_QUEUE_TEXT} characters)` }]);
  return text.trim();
};

/** Clusters' queues: create, read, describe, delete, and pause or resume their dispatch. */
export function createQueueRpcs(deps: QueueRpcsDeps): QueueRpcs {
  const { clusters, queues, directory, now } = deps;

  /** The cluster a request names, of its organization (NotFound otherwise). */
  const requireCluster = async (organizationId: string, clusterId: string) => {
    const cluster =
      isUuid(organizationId) && isUuid(clusterId) ? await clusters.findCluster(organizationId, clusterId) : null;
    if (!cluster) throw notFound("cluster");
    return cluster;
  };
  const requireQueue = async (req: { organizationId: string; clusterId: string; id: string }) => {
    await requireCluster(req.organizationId, req.clusterId);
    const queue = isUuid(req.id) ? await queues.findQueue(req.organizationId, req.clusterId, req.id) : null;
    if (!queue) throw notFound("queue");
    return queue;
  };
  /** Writes a change and drops this process's cached queues of the cluster. */
  const change = async (
    q: QueueDoc,
    set: Parameters<QueueRepository["updateQueue"]>[3],
    guard?: { paused: boolean },
  ) => {
    const updated = await queues.updateQueue(q.organizationId, q.clusterId, q._id, set, guard);
    directory.forget(q.organizationId, q.clusterId);
    return updated;
  };

  return {
    async createClusterQueue(req) {
      const cluster = await requireCluster(req.organizationId, req.clusterId);
      const key = req.key.trim();
      const problem = queueKeyProblem(key);
      if (problem) throw invalidFields([{ field: "key", code: problem }]);
      const description = checkText("description", req.description);
      if ((await queues.listQueues(cluster.organizationId, cluster._id)).length >= MAX_QUEUES_PER_CLUSTER)
        throw failedPrecondition(`A cluster has at most ${MAX_QUEUES_PER_CLUSTER} queues`);
      const queue: QueueDoc = {
        _id: newId(),
        organizationId: cluster.organizationId,
        clusterId: cluster._id,
        key,
        description,
        dispatchPaused: false,
        dispatchPausedAt: null,
        dispatchPausedNote: null,
        dispatchPausedBy: null,
        createdAt: now(),
        createdBy: userRef(req.createdBy),
      };
      try {
        await queues.insertQueue(queue);
      } catch (err) {
        if (err instanceof DuplicateQueueError) throw alreadyExists("key", "has already been taken", err);
        throw err;
      }
      directory.forget(queue.organizationId, queue.clusterId);
      return { queue: queueMessage(queue) };
    },

    async getClusterQueue(req) {
      return { queue: queueMessage(await requireQueue(req)) };
    },

    async listClusterQueues(req) {
      const cluster = await requireCluster(req.organizationId, req.clusterId);
      return { queues: (await queues.listQueues(cluster.organizationId, cluster._id)).map(queueMessage) };
    },

    async updateClusterQueue(req) {
      const set = req.description === undefined ? {} : { description: checkText("description", req.description) };
      const queue = await requireQueue(req);
      const updated = await change(queue, set);
      if (!updated) throw notFound("queue");
      return { queue: queueMessage(updated) };
    },

    async deleteClusterQueue(req) {
      const queue = await requireQueue(req);
      const live = (await deps.agents.countAgents(queue.organizationId, queue.clusterId))
        .filter((c) => c.queue === queue.key)
        .reduce((n, c) => n + c.count, 0);
      if (live > 0)
        throw failedPrecondition(
          `Queue ${queue.key} has ${live} connected agent${live === 1 ? "" : "s"}: stop them before deleting it`,
        );
      if (!(await queues.deleteQueue(queue.organizationId, queue.clusterId, queue._id))) throw notFound("queue");
      directory.forget(queue.organizationId, queue.clusterId);
      return {};
    },

    async pauseClusterQueue(req) {
      const note = checkText("dispatch_paused_note", req.note);
      const queue = await requireQueue(req);
      if (queue.dispatchPaused) throw failedPrecondition("The queue's dispatch is already paused");
      const updated = await change(
        queue,
        {
          dispatchPaused: true,
          dispatchPausedAt: now(),
          dispatchPausedNote: note || null,
          dispatchPausedBy: userRef(req.pausedBy),
        },
        { paused: false },
      );
      if (!updated) throw failedPrecondition("The queue's dispatch is already paused");
      return { queue: queueMessage(updated) };
    },

    async resumeClusterQueue(req) {
      const queue = await requireQueue(req);
      if (!queue.dispatchPaused) throw failedPrecondition("The queue's dispatch is not paused");
      const updated = await change(
        queue,
        { dispatchPaused: false, dispatchPausedAt: null, dispatchPausedNote: null, dispatchPausedBy: null },
        { paused: true },
      );
      if (!updated) throw failedPrecondition("The queue's dispatch is not paused");
      await deps.resumed?.(updated);
      return { queue: queueMessage(updated) };
    },
  };
}
