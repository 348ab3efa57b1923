import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";
import type { GroupSlot } from "../domain/concurrency.js";

/**
 * The slots of concurrency groups, one document per taken slot with a unique id per (organization, group, slot):
 * two processes can never hand out the same slot, so a group never runs more jobs than its limit.
 */
export interface ConcurrencySlotRepository {
  slotsOf(organizationId: string, group: string): Promise<GroupSlot[]>;
  /** Takes a free slot for a job; false when another job holds it. */
  take(organizationId: string, group: string, slot: number, jobId: string, at: Date): Promise<boolean>;
  /** Frees a slot if this job still holds it. */
  release(organizationId: string, group: string, slot: number, jobId: string): Promise<void>;
}

type SlotDoc = { _id: string; organizationId: string; group: string; slot: number; jobId: string; takenAt: Date };

const slotId = (organizationId: string, group: string, slot: number) => JSON.stringify([organizationId, group, slot]);

/** The MongoDB implementation; creates its index before returning. */
export async function createMongoConcurrencySlotRepository(db: Db): Promise<ConcurrencySlotRepository> {
  const slots: Collection<SlotDoc> = db.collection("concurrency_slots");
  await slots.createIndex({ organizationId: 1, group: 1 }, { name: "group_slots" });
  return {
    async slotsOf(organizationId, group) {
      const docs = await slots.find({ organizationId, group }).toArray();
      return docs.map((d) => ({ slot: d.slot, jobId: d.jobId, takenAt: d.takenAt }));
    },
    async take(organizationId, group, slot, jobId, at) {
      try {
        await slots.insertOne({
          _id: slotId(organizationId, group, slot),
          organizationId,
          group,
          slot,
          jobId,
          takenAt: at,
        });
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    },
    async release(organizationId, group, slot, jobId) {
      await slots.deleteOne({ _id: slotId(organizationId, group, slot), jobId });
    },
  };
}
