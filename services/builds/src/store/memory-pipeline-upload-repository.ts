import type { UploadPlan } from "../domain/pipeline-upload.js";
import { asStored } from "./memory-document.js";
import type { PipelineUploadRepository, UploadRecord } from "./pipeline-upload-repository.js";

/**
 * An in-memory PipelineUploadRepository for tests: one record per upload id, its plan kept as JSON text as the
 * MongoDB implementation keeps it (so a plan is read back as JSON would give it).
 */
export function createMemoryPipelineUploadRepository(): PipelineUploadRepository {
  const records = new Map<string, Omit<UploadRecord, "plan"> & { planJson: string | null }>();
  return {
    async find(id) {
      const stored = records.get(id);
      if (!stored) return null;
      const { planJson, ...rest } = asStored(stored);
      return { ...rest, plan: planJson ? (JSON.parse(planJson) as UploadPlan) : null };
    },
    async insert({ plan, ...rest }) {
      if (records.has(rest.id)) return false;
      records.set(rest.id, asStored({ ...rest, planJson: plan ? JSON.stringify(plan) : null }));
      return true;
    },
    async markApplied(id) {
      const stored = records.get(id);
      if (stored) records.set(id, { ...stored, state: "applied", planJson: null });
    },
    async markPlanned({ plan, id, stepIds, jobsAdded, notify }) {
      const stored = records.get(id);
      if (stored?.state !== "pending") return false;
      const { request: _, ...rest } = stored;
      records.set(
        id,
        asStored({
          ...rest,
          state: "processing" as const,
          planJson: plan ? JSON.stringify(plan) : null,
          stepIds,
          jobsAdded,
          ...(notify ? { notify } : {}),
        }),
      );
      return true;
    },
    async markRejected(id, message) {
      const stored = records.get(id);
      if (stored?.state !== "pending") return false;
      const { request: _, ...rest } = stored;
      records.set(id, { ...rest, state: "rejected", message });
      return true;
    },
    async unfinished(before, limit) {
      return [...records.values()]
        .filter((r) => (r.state === "pending" || r.state === "processing") && r.createdAt < before)
        .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
        .slice(0, limit)
        .map(({ planJson, ...rest }) => ({
          ...asStored(rest),
          plan: planJson ? (JSON.parse(planJson) as UploadPlan) : null,
        }));
    },
    async removeOfBuilds(buildIds) {
      for (const [id, record] of records) if (buildIds.includes(record.buildId)) records.delete(id);
    },
  };
}
