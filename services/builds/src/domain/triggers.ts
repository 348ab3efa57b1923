/**
 * Trigger steps (docs/compatibility.md#pipeline-yaml): what the build a trigger job creates is made of, and when
 * creating it needs a rule. Pure.
 */
import type { Build, TriggeredFrom, UserSnapshot } from "./build.js";
import type { Job } from "./job.js";

/** The target pipeline, as far as the rules here read it. */
export interface TriggerTarget {
  id: string;
  slug: string;
  defaultBranch: string;
  clusterId?: string | undefined;
}

/** What the child build of a trigger job is created with. */
export interface TriggeredBuild {
  organizationSlug: string;
  creator: UserSnapshot | null;
  commit: string;
  branch: string;
  message: string;
  author: { name: string; email: string } | null;
  cleanCheckout: boolean;
  env: Record<string, string>;
  metaData: Record<string, string>;
  pullRequest: null;
  source: "trigger_job";
  rebuiltFrom: null;
  triggeredFrom: TriggeredFrom;
}

/**
 * The child build of a trigger job: the step's `build` attributes, else Buildkite's defaults (commit HEAD, the
 * target's default branch, the step's label as the message, else the parent's message); the parent build's
 * creator and author; source `trigger_job`.
 */
export function triggeredBuildInput(job: Job, parent: Build, target: TriggerTarget): TriggeredBuild {
  const build = job.trigger?.build ?? {};
  return {
    organizationSlug: parent.pipeline.organizationSlug,
    creator: parent.creator,
    commit: build.commit || "HEAD",
    branch: build.branch || target.defaultBranch || "main",
    message: build.message || job.label || parent.message,
    author: parent.author,
    cleanCheckout: false,
    env: { ...build.env },
    metaData: { ...build.meta_data },
    pullRequest: null,
    source: "trigger_job",
    rebuiltFrom: null,
    triggeredFrom: {
      buildId: parent.id,
      buildNumber: parent.number,
      pipelineId: parent.pipelineId,
      pipelineSlug: parent.pipelineSlug,
      jobId: job.id,
    },
  };
}

/** Whether a trigger from a job of one cluster reaches another (no cluster counts as a cluster of its own). */
export function crossesClusters(fromClusterId: string | null, toClusterId: string | null | undefined): boolean {
  return (fromClusterId ?? "") !== (toClusterId ?? "");
}
