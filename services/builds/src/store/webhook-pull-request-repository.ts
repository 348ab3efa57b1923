import type { OpenPullRequest, PullRequestState } from "@conveyor/ci-rules";
import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";

/**
 * The pull requests webhook deliveries told of, per pipeline: whether each is open, from which branch, and what a
 * build of it carries. A push to the head branch of an open pull request from the pipeline's repository builds as
 * that pull request's build (ci-rules' build-rules.ts).
 */
export interface WebhookPullRequestRepository {
  /**
   * Records pull request `number`'s state as of `at`; a state older than the one recorded (deliveries may arrive
   * out of order) changes nothing.
   */
  record(pipelineId: string, number: string, state: PullRequestState, at: Date): Promise<void>;
  /** The open pull request from `headBranch` of the pipeline's own repository (not a fork's), newest first. */
  openFrom(pipelineId: string, headBranch: string): Promise<OpenPullRequest | null>;
  /** Forgets a deleted pipeline's pull requests. */
  removeOfPipeline(pipelineId: string): Promise<void>;
}

/** A pull request as stored: its id is `{pipelineId}:{number}`. */
interface PullRequestDoc extends PullRequestState {
  _id: string;
  pipelineId: string;
  number: string;
  at: Date;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoWebhookPullRequestRepository(db: Db): Promise<WebhookPullRequestRepository> {
  const pullRequests: Collection<PullRequestDoc> = db.collection("webhook_pull_requests");
  await pullRequests.createIndex({ pipelineId: 1, headBranch: 1 }, { name: "pipeline_head_branch" });
  return {
    async record(pipelineId, number, state, at) {
      const _id = `${pipelineId}:${number}`;
      const doc: PullRequestDoc = { _id, pipelineId, number, ...state, at };
      // The newer state wins: replace one recorded at or before `at`, else insert when none is recorded. An insert
      // racing another finds the duplicate key: the other one is recorded, and the newer of the two is kept by
      // trying the replace again.
      for (let attempt = 0; attempt < 2; attempt++) {
        const replaced = await pullRequests.replaceOne({ _id, at: { $lte: at } }, doc);
        if (replaced.matchedCount > 0) return;
        if (await pullRequests.findOne({ _id }, { projection: { _id: 1 } })) return;
        try {
          await pullRequests.insertOne(doc);
          return;
        } catch (err) {
          if (!isDuplicateKeyError(err)) throw err;
        }
      }
    },
    async openFrom(pipelineId, headBranch) {
      const doc = await pullRequests.findOne({ pipelineId, headBranch, open: true, fork: false }, { sort: { at: -1 } });
      return doc?.pullRequest ?? null;
    },
    async removeOfPipeline(pipelineId) {
      await pullRequests.deleteMany({ pipelineId });
    },
  };
}
