import type { BuildsContext } from "../builds-context.js";
import type { JobEvent } from "../domain/state-machine.js";
import { type JobTransitions, movedOn } from "./job-transitions.js";

/** How many jobs one sweep moves at most, per kind. */
const SWEEP_LIMIT = 100;

/** When the sweepers act, relative to the job's own times. */
export interface SweepSettings {
  /** A scheduled job no agent took for this long expires. */
  scheduledExpiryMs: number;
  /** A timing-out job its agent has not stopped this long after its deadline ends as timed out. */
  timeoutGraceMs: number;
}

/**
 * The server's clocks on jobs (docs/compatibility.md#cancellation-and-timeouts, #job-states): a running job past its
 * deadline starts timing out (its agent sees `timing_out` at its next status poll and stops it); one its agent never
 * stops is ended as timed out after a grace period; a scheduled job no agent took in time expires. Every change is a
 * compare-and-set transition, so sweeps in several processes at once change each job once.
 */
export function createJobSweeps(
  ctx: BuildsContext,
  transitions: JobTransitions,
  others: ReadonlyArray<{ sweep(): Promise<void> }>,
  settings: SweepSettings,
) {
  const { repo, now, logger } = ctx;
  // A job expires after a day by default: looking once a minute (a tenth of the expiry when that is shorter) is
  // enough. The look is a range on the `scheduled_age` index (the bundled FerretDB pushes it down: 5,000 queued jobs
  // of which none is due cost it 6 ms), so it reads only the jobs that expire.
  const expiryEveryMs = Math.min(60_000, settings.scheduledExpiryMs / 10);
  let expiredAt = Number.NEGATIVE_INFINITY;

  const sweep = async (
    state: "running" | "timing_out" | "scheduled",
    field: "deadlineAt" | "runnableAt",
    before: Date,
    event: JobEvent,
  ): Promise<number> => {
    let moved = 0;
    for (const job of await repo.jobsDue(state, field, before, SWEEP_LIMIT)) {
      if (event.type === "expire" && job.type !== "script") continue;
      try {
        await transitions.apply(job.id, event);
        moved++;
        logger.info({ jobId: job.id, buildId: job.buildId, event: event.type }, "job swept");
      } catch (err) {
        // It moved on meanwhile (finished, canceled, taken by an agent): nothing to do.
        if (movedOn(err)) logger.debug({ err, jobId: job.id, event: event.type }, "swept job changed first");
        else logger.warn({ err, jobId: job.id, event: event.type }, "job not swept; the next sweep tries again");
      }
    }
    return moved;
  };

  return {
    /** One pass of every sweeper (and of the others': trigger jobs, concurrency groups); what the clocks moved. */
    async sweep(): Promise<{ timingOut: number; timedOut: number; expired: number }> {
      const at = now().getTime();
      const timingOut = await sweep("running", "deadlineAt", new Date(at), { type: "timeout" });
      const timedOut = await sweep("timing_out", "deadlineAt", new Date(at - settings.timeoutGraceMs), {
        type: "timed_out",
      });
      let expired = 0;
      if (at - expiredAt >= expiryEveryMs) {
        expiredAt = at;
        expired = await sweep("scheduled", "runnableAt", new Date(at - settings.scheduledExpiryMs), {
          type: "expire",
        });
      }
      for (const other of others) await other.sweep();
      return { timingOut, timedOut, expired };
    },
  };
}

export type JobSweeps = ReturnType<typeof createJobSweeps>;
