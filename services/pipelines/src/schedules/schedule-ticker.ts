/**
 * The schedule ticker: every pipelines replica runs it on a timer (main.ts), and each due tick of a schedule creates
 * exactly one build (docs/compatibility.md#pipeline-schedules). A tick is claimed first by its unique key; the claim's
 * winner creates the build (`source: schedule`), records it on the claim, then moves the schedule on to its next
 * time after both the tick and now, so ticks missed while the stack was down are built once. An attempt that cannot
 * build (the pipeline archived or deleted, the builds service refusing) is recorded as the schedule's
 * `failed_message` and `failed_at`, never dropped.
 */

import { ConnectError } from "@connectrpc/connect";
import type { BuildsService } from "@conveyor/proto/builds";
import type { Client, Logger } from "@conveyor/runtime";
import { parseCronline } from "../domain/cronline.js";
import { nextBuildAfterTick } from "../domain/schedule-fields.js";
import type { PipelinesRepository } from "../store/pipelines-repository.js";
import type { ScheduleDoc, ScheduleRepository, TickOutcome } from "../store/schedule-repository.js";

/** What the ticker works with. */
export interface ScheduleTickerDeps {
  schedules: ScheduleRepository;
  pipelines: Pick<PipelinesRepository, "find">;
  builds: Pick<Client<typeof BuildsService>, "createBuild">;
  logger: Pick<Logger, "info" | "warn">;
  now?: () => Date;
  /**
   * How long a claimed tick may go without its build before another ticker reports it lost: longer than a build
   * creation can take (its RPC deadline), so a slow creation is never taken for a stopped one.
   */
  claimLeaseMs?: number;
  /** Schedules handled per pass; the rest wait for the next pass. */
  batch?: number;
}

/** What one pass did, counted (main.ts logs passes that did anything). */
export interface TickPass {
  built: number;
  failed: number;
  /** Ticks another ticker had claimed. */
  taken: number;
}

const DEFAULT_CLAIM_LEASE_MS = 2 * 60_000;
const DEFAULT_BATCH = 100;

/** A tick's build could not be made: why, and whether the schedule can never build again (its pipeline is gone). */
type Refusal = { failed: string; disable?: boolean };

/** Creates the ticker; `pass` handles every schedule due now, once. */
export function createScheduleTicker(deps: ScheduleTickerDeps) {
  const { schedules, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const lease = deps.claimLeaseMs ?? DEFAULT_CLAIM_LEASE_MS;

  /** Creates the tick's build: its id, or why there is none. */
  const build = async (s: ScheduleDoc): Promise<{ buildId: string } | Refusal> => {
    const pipeline = await deps.pipelines.find(s.organizationId, s.pipelineId);
    if (!pipeline) return { failed: "The pipeline was deleted.", disable: true };
    if (pipeline.archivedAt) return { failed: "Pipeline is archived: unarchive it to build on schedule again." };
    try {
      const res = await deps.builds.createBuild({
        pipelineId: s.pipelineId,
        organizationId: s.organizationId,
        organizationSlug: s.organizationSlug,
        commit: s.commit,
        branch: s.branch,
        message: s.message,
        env: JSON.parse(s.envJson) as Record<string, string>,
        source: "schedule",
        // The schedule's branch is its owner's explicit choice, as a build made by hand is.
        ignorePipelineBranchFilters: true,
      });
      return { buildId: res.build?.id ?? "" };
    } catch (err) {
      return { failed: ConnectError.from(err).rawMessage };
    }
  };

  /** Handles one due schedule's tick. */
  const handle = async (s: ScheduleDoc, pass: TickPass): Promise<void> => {
    const tick = s.nextBuildAt;
    if (!tick) return;
    const at = now();
    const cron = parseCronline(s.cronline);
    if (typeof cron === "string") {
      // Only a cron line that parsed was stored; one a newer cron library refuses stops here, saying why.
      await settle(s, tick, {
        failedMessage: `The cron line ${cron}.`,
        failedAt: at,
        nextBuildAt: null,
        enabled: false,
      });
      pass.failed++;
      return;
    }
    const next = nextBuildAfterTick(cron, tick, at);
    if (!(await schedules.claimTick(s._id, tick, at))) {
      pass.taken++;
      await recoverClaim(s, tick, next, at);
      return;
    }
    const made = await build(s);
    if ("buildId" in made) {
      await schedules.completeTick(s._id, tick, made.buildId);
      await settle(s, tick, { nextBuildAt: next, failedMessage: null, failedAt: null });
      pass.built++;
      return;
    }
    logger.warn({ scheduleId: s._id, pipelineId: s.pipelineId, tick, reason: made.failed }, "scheduled build failed");
    await schedules.completeTick(s._id, tick, null);
    await settle(s, tick, {
      nextBuildAt: made.disable ? null : next,
      failedMessage: made.failed,
      failedAt: at,
      ...(made.disable ? { enabled: false } : {}),
    });
    pass.failed++;
  };

  /** Moves the schedule on from the tick it handled; says so when its owner changed it meanwhile. */
  const settle = async (s: ScheduleDoc, tick: Date, outcome: TickOutcome) => {
    if (!(await schedules.advance(s._id, tick, outcome)))
      logger.info({ scheduleId: s._id, tick }, "schedule changed while its tick was handled; kept as changed");
  };

  /**
   * A tick claimed before: by another ticker now (nothing to do), or by one that stopped. One that stopped after
   * creating the build left the schedule at the tick: it is moved on. One that stopped before recording a build may or
   * may not have made it; past the lease that is recorded as a failure rather than risking a second build.
   */
  const recoverClaim = async (s: ScheduleDoc, tick: Date, next: Date | null, at: Date) => {
    const claim = await schedules.findTick(s._id, tick);
    if (!claim) return;
    if (claim.buildId !== null) {
      await schedules.advance(s._id, tick, { nextBuildAt: next, failedMessage: null, failedAt: null });
      return;
    }
    if (at.getTime() - claim.claimedAt.getTime() < lease) return;
    const failedMessage = `The build due at ${tick.toISOString()} may not have been created: the scheduler stopped while creating it.`;
    logger.warn({ scheduleId: s._id, tick }, "a scheduled build's claim was abandoned");
    await schedules.advance(s._id, tick, { nextBuildAt: next, failedMessage, failedAt: at });
  };

  return {
    /** Handles every schedule due now (up to the batch); what it did. */
    async pass(): Promise<TickPass> {
      const pass: TickPass = { built: 0, failed: 0, taken: 0 };
      const due = await schedules.due(now(), deps.batch ?? DEFAULT_BATCH);
      for (const s of due) {
        try {
          await handle(s, pass);
        } catch (err) {
          // One schedule's storage error must not hold up the others; its tick is still due and is tried again.
          logger.warn({ err, scheduleId: s._id }, "schedule tick not handled; tried again on the next pass");
          pass.failed++;
        }
      }
      return pass;
    },
  };
}

export type ScheduleTicker = ReturnType<typeof createScheduleTicker>;
