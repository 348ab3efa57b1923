import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Pipeline } from "@conveyor/proto/pipelines";
import type { BuildsContext } from "../builds-context.js";
import { type BuildCreation, checkPipeline } from "../creation/build-creation.js";
import type { Build } from "../domain/build.js";
import type { Job } from "../domain/job.js";
import { crossesClusters, triggeredBuildInput } from "../domain/triggers.js";
import { type JobTransitions, movedOn } from "./job-transitions.js";

/** What the trigger runner asks other services: the target pipeline, and whether the build may be created. */
export interface TriggerLookups {
  /** The organization's pipeline with this slug, or null. */
  pipeline(organizationId: string, slug: string): Promise<Pipeline | null>;
  /** Whether the user may create builds of the pipeline (their role and teams). */
  mayBuild(organizationId: string, userId: string, pipelineId: string): Promise<boolean>;
  /** Whether a `pipeline.trigger_build.pipeline` rule lets the source pipeline trigger the target. */
  ruleAllows(organizationId: string, sourcePipelineId: string, targetPipelineId: string): Promise<boolean>;
}

/**
 * Why a trigger finds no pipeline to build: the same words whether none has the slug or the build's creator may not
 * build the one that has it, so a trigger's log tells nobody of a pipeline they cannot see (docs/security.md).
 */
export function noPipelineToTrigger(slug: string, parent: Pick<Build, "creator">): string {
  const who = parent.creator ? ` that ${parent.creator.name || parent.creator.email} may create builds of` : "";
  return `No pipeline "${slug}" exists in this organization${who}, so this trigger cannot create its build`;
}

/** Why a trigger job may not create a build of `target`, or null when it may. */
async function refusal(job: Job, parent: Build, target: Pipeline, lookups: TriggerLookups): Promise<string | null> {
  if (parent.creator && !(await lookups.mayBuild(job.organizationId, parent.creator.id, target.id)))
    return noPipelineToTrigger(target.slug, parent);
  if (
    crossesClusters(job.clusterId, target.clusterId) &&
    !(await lookups.ruleAllows(job.organizationId, parent.pipelineId, target.id))
  )
    return `"${target.slug}" is in another cluster: a pipeline.trigger_build.pipeline rule from "${parent.pipelineSlug}" to "${target.slug}" must allow this trigger`;
  return null;
}

/** A running trigger job whose child build is not recorded yet is looked at again after this long. */
const UNRECORDED_AFTER_MS = 60_000;

/** The id of the build a trigger job creates: derived from the job, so a repeated attempt finds the same build. */
export function childBuildId(jobId: string): string {
  const hex = createHash("sha256").update(`trigger:${jobId}`).digest("hex");
  // A UUID (version 8, "custom") made of the hash.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((Number.parseInt(hex.slice(16, 17), 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Trigger steps (docs/compatibility.md#pipeline-yaml): a scheduled trigger job starts (a compare-and-set,
 * so one process wins), then creates its child build on the target pipeline, if the parent build's creator may
 * build it and, across clusters, a `pipeline.trigger_build.pipeline` rule allows it. An async trigger passes at
 * once; otherwise it ends as its child build ends. A trigger that cannot create its build fails, with the reason
 * in its log. Work runs off the callers' locks; the sweep finds what a crash left undone.
 */
export function createJobTriggers(
  ctx: BuildsContext,
  creation: BuildCreation,
  transitions: JobTransitions,
  lookups: TriggerLookups,
) {
  const { repo, logger, now } = ctx;
  const inFlight = new Set<string>();

  /** Writes why the trigger failed as the job's log, then fails it. */
  const fail = async (job: Job, reason: string) => {
    const text = `${reason}\n`;
    const bytes = Buffer.from(text);
    await ctx.logs.insertChunk({
      jobId: job.id,
      sequence: 1,
      offset: 0,
      size: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      gzip: gzipSync(bytes),
    });
    logger.info({ jobId: job.id, buildId: job.buildId, reason }, "trigger failed");
    await transitions.apply(job.id, { type: "finish", exitStatus: 1 });
  };

  /** Ends a synchronous trigger job as its finished child build ended. */
  const follow = async (job: Job, child: Build) => {
    if (job.trigger?.async || !child.finishedAt) return;
    await transitions.apply(job.id, { type: "finish", exitStatus: child.state === "passed" ? 0 : 1 });
  };

  /** Creates (or finds) the child build of a running trigger job and records it. */
  const ensureChild = async (job: Job) => {
    const parent = await repo.findBuildById(job.buildId);
    if (!parent || !job.trigger) return;
    const id = childBuildId(job.id);
    let child = await repo.findBuildById(id);
    if (!child) {
      const target = await lookups.pipeline(job.organizationId, job.trigger.pipeline);
      if (!target) return fail(job, noPipelineToTrigger(job.trigger.pipeline, parent));
      const refused = await refusal(job, parent, target, lookups);
      if (refused) return fail(job, refused);
      try {
        const input = triggeredBuildInput(job, parent, target);
        // A trigger ignores the target's branch filter (it is no push); an archived target still refuses.
        child = (await creation.create({ ...input, pipeline: checkPipeline(target, input.branch, true), id })).build;
      } catch (err) {
        const error = ConnectError.from(err);
        if (error.code !== Code.FailedPrecondition && error.code !== Code.InvalidArgument) throw err;
        return fail(job, `The build on "${target.slug}" could not be created: ${error.rawMessage}`);
      }
    }
    const recorded = await repo.updateJob(job.id, "running", {
      triggeredBuild: { id: child.id, number: child.number, pipelineSlug: child.pipelineSlug },
    });
    if (!recorded) return;
    if (job.trigger.async) await transitions.apply(job.id, { type: "finish", exitStatus: 0 });
    else await follow(recorded, child);
  };

  /** Runs one trigger job as far as it can go now. */
  const run = async (jobId: string) => {
    if (inFlight.has(jobId)) return;
    inFlight.add(jobId);
    try {
      let job = await repo.findJob(jobId);
      if (job?.type !== "trigger") return;
      if (job.state === "scheduled") job = (await transitions.apply(job.id, { type: "start" })).job;
      if (job.state === "running" && !job.triggeredBuild) await ensureChild(job);
    } finally {
      inFlight.delete(jobId);
    }
  };

  /** Starts work without holding up the caller (which may hold a build's lock); failures wait for the sweep. */
  const kick = (what: string, work: () => Promise<unknown>) => {
    setImmediate(() => {
      work().catch((err) => logger.warn({ err }, `${what} failed; the trigger sweep will try again`));
    });
  };

  return {
    /** After a reconcile: scheduled trigger jobs run, and a finished child build ends its trigger job. */
    settled(build: Build, jobs: readonly Job[]) {
      for (const job of jobs) {
        if (job.type === "trigger" && job.state === "scheduled" && !inFlight.has(job.id))
          kick("trigger", () => run(job.id));
      }
      const from = build.triggeredFrom;
      if (from && build.finishedAt) {
        kick("trigger follow-up", async () => {
          const job = await repo.findJob(from.jobId);
          if (job?.state === "running") await follow(job, build);
        });
      }
    },

    /**
     * Finishes what was missed: scheduled trigger jobs, running ones without a recorded child build for a while,
     * and synchronous ones whose child build has finished.
     */
    async sweep(): Promise<void> {
      for (const job of await repo.jobsOfType("trigger", ["scheduled", "running"], 100)) {
        try {
          if (job.state === "scheduled") await run(job.id);
          else if (!job.triggeredBuild) {
            if (now().getTime() - (job.startedAt?.getTime() ?? 0) > UNRECORDED_AFTER_MS) await run(job.id);
          } else if (job.trigger?.async) {
            await transitions.apply(job.id, { type: "finish", exitStatus: 0 });
          } else {
            const child = await repo.findBuildById(job.triggeredBuild.id);
            if (child?.finishedAt) await follow(job, child);
          }
        } catch (err) {
          if (movedOn(err)) logger.debug({ err, jobId: job.id }, "trigger job changed during the sweep");
          else logger.warn({ err, jobId: job.id }, "trigger job not swept; the next sweep tries again");
        }
      }
    },
  };
}

export type JobTriggers = ReturnType<typeof createJobTriggers>;
