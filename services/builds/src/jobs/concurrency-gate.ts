import { createCoalescer } from "@conveyor/runtime";
import type { BuildsContext } from "../builds-context.js";
import type { Build } from "../domain/build.js";
import { admissions, type GroupJob, staleSlots } from "../domain/concurrency.js";
import type { Job } from "../domain/job.js";
import { stampsFor } from "../domain/job-stamps.js";
import { isFinishedJobState } from "../domain/job-states.js";
import { GROUP_WAITING_STATES, SLOT_HOLDING_STATES } from "../domain/state-sets.js";
import type { ConcurrencySlotRepository } from "../store/concurrency-slot-repository.js";

/** A finished job of a group frees its slot; builds settling within this long after it ask the gate to look. */
const RECENTLY_FINISHED_MS = 60_000;

/** How many groups with waiting jobs one sweep looks at. */
const SWEEP_GROUPS = 100;

const groupKey = (organizationId: string, group: string) => JSON.stringify([organizationId, group]);

/** A job as the gate reads it: its limit, and its step's `concurrency_method` (default ordered). */
export function groupJob(job: Job): GroupJob {
  const method = job.step.type === "script" ? (job.step.concurrency_method ?? "ordered") : "ordered";
  return { id: job.id, state: job.state, createdAt: job.createdAt, concurrency: job.concurrency ?? 1, method };
}

/**
 * The gate of concurrency groups: frees the slots of jobs that finished, then moves the limited jobs that may
 * start to `scheduled`, each after taking a slot (a unique document, so the limit holds across processes). One run
 * per group at a time in a process (coalesced); the sweep covers what a crash or a lost event left waiting.
 */
export function createConcurrencyGate(ctx: BuildsContext, slots: ConcurrencySlotRepository) {
  const { repo, now, logger } = ctx;

  const admit = async (organizationId: string, group: string) => {
    const jobs = await repo.groupJobs(organizationId, group, [...GROUP_WAITING_STATES, ...SLOT_HOLDING_STATES]);
    const models = jobs.map(groupJob);
    const held = await slots.slotsOf(organizationId, group);
    const stale = staleSlots(held, models, now());
    for (const s of stale) await slots.release(organizationId, group, s.slot, s.jobId);
    const free = new Set(stale.map((s) => s.slot));
    const byId = new Map(jobs.map((j) => [j.id, j]));
    for (const { jobId, slot } of admissions(
      models,
      held.filter((s) => !free.has(s.slot)).map((s) => s.slot),
    )) {
      const job = byId.get(jobId);
      if (!job) continue;
      // Another process may have taken the slot first: its own run admits the next jobs.
      if (!(await slots.take(organizationId, group, slot, job.id, now()))) return;
      const at = now();
      await ctx.markCounts(job.pipelineId);
      const updated = await ctx.stateEvents.changeJob(
        { ...job, state: "limited" },
        { state: "scheduled", ...stampsFor(job, "scheduled", at) },
      );
      if (!updated) {
        await slots.release(organizationId, group, slot, job.id);
        continue;
      }
      logger.info({ jobId: job.id, group, slot }, "job took a concurrency slot");
      ctx.publishCounts(job.pipelineId);
    }
  };

  const runs = createCoalescer(async (key) => {
    const [organizationId, group] = JSON.parse(key) as [string, string];
    try {
      await admit(organizationId, group);
    } catch (err) {
      logger.warn({ err, organizationId, group }, "concurrency gate failed; the sweep will try again");
    }
  });

  return {
    /** After a reconcile: groups with a job waiting for a slot, or one that just finished, are looked at. */
    settled(_build: Build, jobs: readonly Job[]) {
      const at = now().getTime();
      for (const job of jobs) {
        if (!job.concurrencyGroup) continue;
        const finishedRecently =
          isFinishedJobState(job.state) && job.finishedAt && at - job.finishedAt.getTime() < RECENTLY_FINISHED_MS;
        if (job.state === "limited" || finishedRecently)
          runs.request(groupKey(job.organizationId, job.concurrencyGroup));
      }
    },

    /** Looks at every group with jobs waiting for a slot. */
    async sweep(): Promise<void> {
      for (const { organizationId, group } of await repo.limitedGroups(SWEEP_GROUPS))
        runs.request(groupKey(organizationId, group));
      await runs.idle();
    },
  };
}

export type ConcurrencyGate = ReturnType<typeof createConcurrencyGate>;
