import type {
  DeleteArtifactRequest,
  GetArtifactRetentionRequest,
  SetArtifactRetentionRequest,
} from "@conveyor/proto/artifacts";
import { invalidFields, isUuid, notFound } from "@conveyor/runtime";
import type { ArtifactsContext } from "../artifacts-context.js";
import { transition } from "../domain/artifact-state.js";
import { isValidRetention, MAX_RETENTION_DAYS } from "../domain/retention.js";

/** Deleting artifacts and an organization's retention. */
export function createManageRpcs(ctx: ArtifactsContext) {
  const { repo, store, config } = ctx;

  const retentionOf = async (organizationId: string) => {
    const days = await repo.getRetention(organizationId);
    return days === null ? { days: config.defaultRetentionDays, isDefault: true } : { days, isDefault: false };
  };

  return {
    async deleteArtifact(req: DeleteArtifactRequest) {
      const doc =
        isUuid(req.buildId) && isUuid(req.jobId) && isUuid(req.id)
          ? await repo.find(req.buildId.toLowerCase(), req.jobId.toLowerCase(), req.id.toLowerCase())
          : null;
      if (!doc) throw notFound("artifact");
      const t = transition("deleted");
      const moved = await repo.transition([doc._id], t.from, t.to, { endedAt: ctx.now(), objectRemoved: false });
      if (moved === 0) throw notFound("artifact");
      try {
        await store.remove([doc.objectKey]);
        await repo.markRemoved([doc._id]);
      } catch (err) {
        // The record says deleted and not removed: the next sweep removes the object.
        ctx.logger.warn({ err, artifactId: doc._id }, "artifact object not removed yet; the sweep retries");
      }
      return {};
    },

    async getArtifactRetention(req: GetArtifactRetentionRequest) {
      if (!isUuid(req.organizationId)) throw notFound("organization");
      return retentionOf(req.organizationId.toLowerCase());
    },

    async setArtifactRetention(req: SetArtifactRetentionRequest) {
      if (!isUuid(req.organizationId)) throw notFound("organization");
      if (req.days !== 0 && !isValidRetention(req.days)) {
        throw invalidFields([{ field: "days", code: `must be 0 (the default) or 1 to ${MAX_RETENTION_DAYS}` }]);
      }
      const organizationId = req.organizationId.toLowerCase();
      await repo.setRetention(organizationId, req.days === 0 ? null : req.days);
      return retentionOf(organizationId);
    },
  };
}
