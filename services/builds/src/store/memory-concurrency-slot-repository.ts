import type { GroupSlot } from "../domain/concurrency.js";
import type { ConcurrencySlotRepository } from "./concurrency-slot-repository.js";

/**
 * An in-memory ConcurrencySlotRepository for tests: one holder per (organization, group, slot), as the MongoDB
 * implementation's unique id keeps it.
 */
export function createMemoryConcurrencySlotRepository(): ConcurrencySlotRepository {
  const slots = new Map<string, GroupSlot & { organizationId: string; group: string }>();
  const slotId = (organizationId: string, group: string, slot: number) => JSON.stringify([organizationId, group, slot]);
  return {
    async slotsOf(organizationId, group) {
      return [...slots.values()]
        .filter((s) => s.organizationId === organizationId && s.group === group)
        .map(({ slot, jobId, takenAt }) => ({ slot, jobId, takenAt: new Date(takenAt.getTime()) }));
    },
    async take(organizationId, group, slot, jobId, at) {
      const id = slotId(organizationId, group, slot);
      if (slots.has(id)) return false;
      slots.set(id, { organizationId, group, slot, jobId, takenAt: new Date(at.getTime()) });
      return true;
    },
    async release(organizationId, group, slot, jobId) {
      const id = slotId(organizationId, group, slot);
      if (slots.get(id)?.jobId === jobId) slots.delete(id);
    },
  };
}
