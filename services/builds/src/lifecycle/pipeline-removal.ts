import { PipelineDeletedSchema } from "@conveyor/proto/pipelines";
import { consumeEvents, decodeEvent, type Logger, type NatsHandle, SUBJECTS } from "@conveyor/runtime";
import type { AnnotationRepository } from "../store/annotation-repository.js";
import type { BuildRepository } from "../store/build-repository.js";
import type { JobLogRepository } from "../store/job-log-repository.js";
import type { PipelineUploadRepository } from "../store/pipeline-upload-repository.js";
import type { WebhookDeliveryRepository } from "../store/webhook-delivery-repository.js";
import type { WebhookPullRequestRepository } from "../store/webhook-pull-request-repository.js";

/** Builds removed per step: each step's queries stay small whatever the pipeline held. */
const BATCH = 200;

export interface PipelineRemovalRepos {
  repo: BuildRepository;
  logs: JobLogRepository;
  annotations: AnnotationRepository;
  uploads: PipelineUploadRepository;
  deliveries: Pick<WebhookDeliveryRepository, "removeOfPipeline">;
  pullRequests: Pick<WebhookPullRequestRepository, "removeOfPipeline">;
}

/**
 * Removes everything of a deleted pipeline's builds: logs, annotations, upload records, jobs and the builds, batch by
 * batch, builds last, so that a removal cut short (a crash, a redelivery) finds what is left by its builds and goes
 * on; then its numbering, and the webhook deliveries and pull requests its webhook told of. Returns how many builds
 * were removed.
 */
export async function removePipelineBuilds(repos: PipelineRemovalRepos, pipelineId: string): Promise<number> {
  let removed = 0;
  for (;;) {
    const buildIds = await repos.repo.buildIdsOfPipeline(pipelineId, BATCH);
    if (buildIds.length === 0) break;
    const jobIds = (await repos.repo.jobsOf(buildIds)).map((j) => j.id);
    await repos.logs.removeLogsOf(jobIds);
    await repos.annotations.removeOfBuilds(buildIds);
    await repos.uploads.removeOfBuilds(buildIds);
    await repos.repo.removeBuilds(buildIds);
    removed += buildIds.length;
  }
  await repos.repo.forgetNumbering(pipelineId);
  await repos.deliveries.removeOfPipeline(pipelineId);
  await repos.pullRequests.removeOfPipeline(pipelineId);
  return removed;
}

/**
 * The builds service's durable consumer of pipeline deletions (published through the pipelines service's outbox):
 * a deleted pipeline's builds go with it, as in Buildkite. Until it has run, the gateway leaves builds whose pipeline
 * is gone out of its lists. Removing what is already gone is harmless, so redelivery is too.
 */
export function consumePipelineRemovals(nats: NatsHandle, repos: PipelineRemovalRepos, logger: Logger) {
  return consumeEvents(nats, {
    durable: "builds-pipeline-deletions",
    subject: SUBJECTS.pipelines.deleted,
    logger,
    async handle(data) {
      const e = decodeEvent(PipelineDeletedSchema, data);
      if (!e.pipelineId) return;
      const removed = await removePipelineBuilds(repos, e.pipelineId);
      if (removed > 0)
        logger.info({ pipelineId: e.pipelineId, builds: removed }, "removed a deleted pipeline's builds");
    },
  });
}
