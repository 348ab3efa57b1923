/** An in-memory ScheduleRepository for unit tests, with the same unique tick keys as the MongoDB one. */

import { type ScheduleDoc, type ScheduleRepository, type ScheduleTickDoc, tickKey } from "./schedule-repository.js";

/** Creates an empty in-memory schedule repository; `schedules` and `ticks` are its contents, for assertions. */
export function createMemoryScheduleRepository() {
  const schedules = new Map<string, ScheduleDoc>();
  const ticks = new Map<string, ScheduleTickDoc>();
  const copy = (doc: ScheduleDoc | undefined) => (doc ? structuredClone(doc) : null);
  const ofPipeline = (pipelineId: string) =>
    [...schedules.values()]
      .filter((s) => s.pipelineId === pipelineId)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a._id.localeCompare(b._id));
  // Each call yields once before touching the maps, as a database round trip would, so racing callers interleave.
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

  const repo: ScheduleRepository = {
    async insert(doc) {
      await turn();
      if (schedules.has(doc._id)) throw new Error(`duplicate schedule ${doc._id}`);
      schedules.set(doc._id, structuredClone(doc));
    },
    async find(pipelineId, id) {
      await turn();
      const doc = schedules.get(id);
      return doc?.pipelineId === pipelineId ? copy(doc) : null;
    },
    async list(pipelineId, skip, limit) {
      await turn();
      const all = ofPipeline(pipelineId);
      return { items: all.slice(skip, skip + limit).map((d) => structuredClone(d)), total: all.length };
    },
    async count(pipelineId) {
      await turn();
      return ofPipeline(pipelineId).length;
    },
    async update(pipelineId, id, changes) {
      await turn();
      const doc = schedules.get(id);
      if (doc?.pipelineId !== pipelineId) return null;
      const updated = { ...doc, ...structuredClone(changes) };
      schedules.set(id, updated);
      return structuredClone(updated);
    },
    async delete(pipelineId, id) {
      await turn();
      if (schedules.get(id)?.pipelineId !== pipelineId) return false;
      schedules.delete(id);
      for (const [key, t] of ticks) if (t.scheduleId === id) ticks.delete(key);
      return true;
    },
    async due(now, limit) {
      await turn();
      return [...schedules.values()]
        .filter((s) => s.enabled && s.nextBuildAt !== null && s.nextBuildAt <= now)
        .sort((a, b) => (a.nextBuildAt?.getTime() ?? 0) - (b.nextBuildAt?.getTime() ?? 0))
        .slice(0, limit)
        .map((d) => structuredClone(d));
    },
    async claimTick(scheduleId, tick, at) {
      await turn();
      const key = tickKey(scheduleId, tick);
      if (ticks.has(key)) return false;
      ticks.set(key, { _id: key, scheduleId, tick, claimedAt: at, buildId: null });
      return true;
    },
    async findTick(scheduleId, tick) {
      await turn();
      const found = ticks.get(tickKey(scheduleId, tick));
      return found ? structuredClone(found) : null;
    },
    async completeTick(scheduleId, tick, buildId) {
      await turn();
      const found = ticks.get(tickKey(scheduleId, tick));
      if (found) found.buildId = buildId;
      for (const [key, t] of ticks) if (t.scheduleId === scheduleId && t.tick < tick) ticks.delete(key);
    },
    async advance(id, tick, outcome) {
      await turn();
      const doc = schedules.get(id);
      if (!doc || doc.nextBuildAt?.getTime() !== tick.getTime()) return false;
      schedules.set(id, { ...doc, ...outcome });
      return true;
    },
  };
  return { repo, schedules, ticks };
}
