import type { PullRequestState } from "@conveyor/ci-rules";
import { asStored } from "./memory-document.js";
import type { WebhookPullRequestRepository } from "./webhook-pull-request-repository.js";

/** An in-memory WebhookPullRequestRepository for tests (and a builds service in memory). */
export function createMemoryWebhookPullRequestRepository(): WebhookPullRequestRepository {
  const pullRequests = new Map<string, PullRequestState & { pipelineId: string; at: Date }>();
  return {
    async record(pipelineId, number, state, at) {
      const key = `${pipelineId}:${number}`;
      const recorded = pullRequests.get(key);
      if (recorded && recorded.at > at) return;
      pullRequests.set(key, asStored({ ...state, pipelineId, at }));
    },
    async openFrom(pipelineId, headBranch) {
      const open = [...pullRequests.values()]
        .filter((p) => p.pipelineId === pipelineId && p.headBranch === headBranch && p.open && !p.fork)
        .sort((a, b) => b.at.getTime() - a.at.getTime());
      return open[0] ? asStored(open[0].pullRequest) : null;
    },
    async removeOfPipeline(pipelineId) {
      for (const [key, state] of pullRequests) if (state.pipelineId === pipelineId) pullRequests.delete(key);
    },
  };
}
