import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  type CommitStatusNotification,
  type CommitStatusNotifications,
  commitStatusesFor,
  connectionForRepository,
  parseRepositoryUrl,
  type StatusBuild,
  type StatusEvent,
  type StatusJob,
  statusSettings,
  stepCommitStatusNotifications,
} from "@conveyor/ci-rules";
import type { Build, Job } from "@conveyor/proto/builds";
import type { DeliveryIntent, EventHandler } from "../events/handler.js";
import { type NotificationEvent, organizationOf } from "../events/notification-event.js";
import type { SourceProviderDoc } from "../providers/source-provider-repository.js";
import { COMMIT_STATUS_KIND, type CommitStatusRequest } from "./commit-status-request.js";

/** What the handler reads besides the event (status-sources.ts reads it over RPC, with short-lived caches). */
export interface StatusSources {
  /** The organization's connections, oldest first. */
  connections(organizationId: string): Promise<SourceProviderDoc[]>;
  /** The pipeline's slug, repository and provider settings; null when it is gone. */
  pipeline(organizationId: string, pipelineId: string): Promise<StatusPipeline | null>;
  /** A build (without jobs) of a job's event; null when it is gone. */
  build(pipelineId: string, number: number): Promise<Build | null>;
  /** The build's `web_url`. */
  webUrl(organizationId: string, pipelineSlug: string, number: number): Promise<string>;
  /** Evaluates a notification's `if:` for the build (false when it cannot be evaluated). */
  conditionHolds(build: Build, pipeline: StatusPipeline, condition: string): Promise<boolean>;
}

/** What the handler reads of a pipeline. */
export interface StatusPipeline {
  slug: string;
  defaultBranch: string;
  repository: string;
  providerSettings: Record<string, unknown>;
  /** The `notify: github_commit_status` entries of its YAML (build and step level). */
  notify: CommitStatusNotifications;
}

const date = (t: Parameters<typeof timestampDate>[0] | undefined) => (t ? timestampDate(t) : null);

/** The build as the rules read it. */
export function statusBuildOf(build: Build, webUrl: string, notify: readonly CommitStatusNotification[]): StatusBuild {
  return {
    number: build.number,
    state: build.state,
    blocked: build.blocked,
    commit: build.commit,
    pullRequest: (build.pullRequest?.id ?? "") !== "",
    pipelineSlug: build.pipelineSlug,
    webUrl,
    startedAt: date(build.startedAt),
    finishedAt: date(build.finishedAt),
    version: build.version,
    notify,
  };
}

/** The job as the rules read it. */
export function statusJobOf(job: Job, notify: readonly CommitStatusNotification[]): StatusJob {
  return {
    id: job.id,
    type: job.type,
    label: job.label || job.name,
    stepKey: job.stepKey,
    state: job.state,
    softFailed: job.softFailed,
    startedAt: date(job.startedAt),
    finishedAt: date(job.finishedAt),
    retriesCount: job.retriesCount,
    parallelGroupIndex: job.parallelGroupIndex ?? null,
    parallelGroupTotal: job.parallelGroupTotal ?? null,
    notify,
  };
}

/**
 * Turns build and job events into commit-status deliveries (docs/statuses.md): nothing for an organization without
 * connections (no RPC is made), nor for a pipeline whose repository no connection serves. One delivery per status,
 * ordered per build and target (the dispatcher sends them one at a time in the events' order).
 */
export function createCommitStatusHandler(sources: StatusSources): EventHandler {
  return {
    name: "commit-statuses",
    async intents(event: NotificationEvent): Promise<DeliveryIntent[]> {
      if (event.type === "agent") return [];
      const organizationId = organizationOf(event);
      const connections = await sources.connections(organizationId);
      if (connections.length === 0) return [];
      const pipelineId = event.type === "build" ? event.build.pipelineId : event.pipelineId;
      const pipeline = await sources.pipeline(organizationId, pipelineId);
      if (!pipeline) return [];
      const repository = parseRepositoryUrl(pipeline.repository);
      if (!repository) return [];
      const connection = connectionForRepository(
        repository,
        connections.map((c) => ({ id: c._id, apiUrl: c.apiUrl, createdAt: c.createdAt.toISOString(), doc: c })),
      );
      if (!connection) return [];
      const settings = statusSettings(pipeline.providerSettings);
      const jobNotify =
        event.type === "job"
          ? stepCommitStatusNotifications(pipeline.notify, {
              stepKey: event.job.stepKey,
              label: event.job.label || event.job.name,
            })
          : [];
      // A job's status is wanted only per step or by its step's notify: otherwise its build is not read.
      const perStep = settings.publishCommitStatus && settings.publishCommitStatusPerStep;
      if (event.type === "job" && (event.job.type !== "script" || (!perStep && jobNotify.length === 0))) return [];
      const build = event.type === "build" ? event.build : await sources.build(pipelineId, event.buildNumber);
      if (!build) return [];
      const webUrl = await sources.webUrl(organizationId, pipeline.slug, build.number);
      const statusBuild = statusBuildOf(
        { ...build, pipelineSlug: build.pipelineSlug || pipeline.slug },
        webUrl,
        pipeline.notify.build,
      );
      const statusEvent: StatusEvent =
        event.type === "build"
          ? { kind: "build", build: statusBuild }
          : { kind: "job", build: statusBuild, job: statusJobOf(event.job, jobNotify) };
      // The notifications' `if:`s, evaluated first (the organization's slug may need a read).
      const notify = statusEvent.kind === "job" ? statusEvent.job.notify : statusBuild.notify;
      const held = new Map<string, boolean>();
      for (const n of notify) {
        if (n.condition !== null && !held.has(n.condition)) {
          held.set(n.condition, await sources.conditionHolds(build, pipeline, n.condition));
        }
      }
      const statuses = commitStatusesFor(statusEvent, settings, (condition) => held.get(condition) === true);
      const host = new URL(connection.apiUrl).host;
      return statuses.map((status) => {
        const request: CommitStatusRequest = {
          connectionId: connection.id,
          organizationId,
          repository,
          sha: build.commit.toLowerCase(),
          status,
        };
        return {
          kind: COMMIT_STATUS_KIND,
          event: `commit_status.${status.state}`,
          targetKey: [connection.id, repository.path, request.sha, status.context].join("\0"),
          host,
          ordered: true,
          request: JSON.parse(JSON.stringify(request)) as Record<string, unknown>,
        };
      });
    },
  };
}
