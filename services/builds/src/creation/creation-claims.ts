/**
 * Build creations are claimed (build-creation.ts): a claim is stored before the build's jobs and removed once the
 * build stands, so that a creation cut off before its build was stored can be found and its jobs removed. Until its
 * build is stored, nothing of a creation is acknowledged to anyone, and no build list or build read shows it.
 */

import type { BuildsContext } from "../builds-context.js";
import type { CreationClaim } from "../store/build-repository.js";

/** A creation takes well under this; a claim older than it was cut off. */
export const CLAIM_GRACE_MS = 60_000;

/**
 * Clears a claim past the grace. Its build stands (only the claim's removal was lost): the claim goes. Its build was
 * never stored (the process died, or its database was lost, before): the jobs it stored go with it, and the
 * pipeline's counters are recounted. Callers hold the build's lock.
 */
export async function clearClaim(ctx: BuildsContext, claim: CreationClaim): Promise<"stood" | "removed"> {
  const { repo, logger } = ctx;
  if (await repo.findBuildById(claim.buildId)) {
    await repo.removeClaim(claim.buildId);
    return "stood";
  }
  await ctx.markCounts(claim.pipelineId);
  await repo.deleteJobs(claim.buildId, claim.jobIds);
  await repo.removeClaim(claim.buildId);
  ctx.publishCounts(claim.pipelineId);
  logger.warn(
    { buildId: claim.buildId, jobs: claim.jobIds.length },
    "build creation was cut off before its build was stored: its jobs were removed",
  );
  return "removed";
}
