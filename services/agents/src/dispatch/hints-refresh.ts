import type { DispatchHints } from "./dispatch-hints.js";
import { REFRESH_LIMIT } from "./dispatch-hints.js";
import type { BuildsClient } from "./job-handoff.js";

/** Refreshes skipped after one that was cut at its limit (so, with a refresh every 3 s, one every 30 s). */
export const TRUNCATED_REFRESH_SKIPS = 9;

/**
 * The periodic repair of the dispatch hints: re-reads what waits for an agent from the builds service and replaces
 * the hints with it (events keep them current in between).
 */
export function createHintsRefresh(deps: { hints: DispatchHints; builds: Pick<BuildsClient, "listDispatchableJobs"> }) {
  const { hints, builds } = deps;
  // A refresh cut at its limit only adds jobs that events missed among the first thousand (it cannot tell what
  // else left the queue), and reading that many costs the database most: it is then done one time in ten.
  let refreshesToSkip = 0;

  return {
    /** One refresh, or one skipped after a refresh cut at its limit. */
    async run(): Promise<void> {
      if (refreshesToSkip > 0) {
        refreshesToSkip--;
        return;
      }
      const since = hints.ticket();
      const { jobs } = await builds.listDispatchableJobs({ limit: REFRESH_LIMIT });
      const truncated = jobs.length >= REFRESH_LIMIT;
      hints.replace(jobs, truncated, since);
      refreshesToSkip = truncated ? TRUNCATED_REFRESH_SKIPS : 0;
    },

    /** Skips no more refreshes: the hints may have missed job events, so the next refresh reads the list. */
    resume(): void {
      refreshesToSkip = 0;
    },
  };
}
