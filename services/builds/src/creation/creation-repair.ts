import type { BuildsContext } from "../builds-context.js";
import { CLAIM_GRACE_MS, clearClaim } from "./creation-claims.js";

/** Claims repaired per pass at most. */
const REPAIR_LIMIT = 50;

/**
 * Clears what cut-off creations left.
 *
 * A creation stores its claim, then its jobs, then its build, then removes its claim (build-creation.ts). A claim
 * found past the grace is cleared (creation-claims.ts): the jobs of a build never stored are removed, and a claim
 * whose build stands simply goes. Until then those jobs may be offered to an agent: the assignment finds no build
 * and is refused (job-transitions.ts), and the agent is offered another job.
 */
export function createCreationRepair(ctx: BuildsContext) {
  const { repo, now, withLock, logger } = ctx;

  return {
    /** One pass: every claim past the grace is cleared. */
    async sweep(): Promise<void> {
      const before = new Date(now().getTime() - CLAIM_GRACE_MS);
      for (const claim of await repo.claimsBefore(before, REPAIR_LIMIT)) {
        try {
          await withLock(claim.buildId, () => clearClaim(ctx, claim));
        } catch (err) {
          logger.warn({ err, buildId: claim.buildId }, "creation claim not cleared; will try again");
        }
      }
    },
  };
}
