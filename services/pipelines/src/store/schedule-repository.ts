/**
 * Persistence of pipeline schedules and of the ticks they were built for: the ScheduleRepository contract and its
 * MongoDB implementation. A tick is claimed by inserting its key (schedule and time) under the collection's unique
 * `_id`, which is what makes each tick build once across replicas and restarts
 * (docs/compatibility.md#pipeline-schedules).
 */

import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";
import type { CreatorDoc } from "./pipelines-repository.js";

/** A stored schedule. */
export interface ScheduleDoc {
  _id: string;
  organizationId: string;
  pipelineId: string;
  /** The organization's slug when the schedule was made: its builds' conditionals read it. */
  organizationSlug: string;
  label: string;
  cronline: string;
  message: string;
  commit: string;
  branch: string;
  /** The env as JSON text: env names may hold dots and dollars, which document stores restrict in field names. */
  envJson: string;
  enabled: boolean;
  /** When the next build is due; null while disabled or when the cron line never comes round again. */
  nextBuildAt: Date | null;
  failedMessage: string | null;
  failedAt: Date | null;
  createdAt: Date;
  createdBy: CreatorDoc;
  updatedAt: Date;
}

/** A tick some ticker claimed: the build it made once it made one. */
export interface ScheduleTickDoc {
  /** `<schedule id>/<tick ISO time>`: unique, so only one ticker ever claims a tick. */
  _id: string;
  scheduleId: string;
  tick: Date;
  claimedAt: Date;
  buildId: string | null;
}

/** What a schedule's owner may change. */
export type ScheduleChangesDoc = Partial<
  Pick<
    ScheduleDoc,
    | "label"
    | "cronline"
    | "message"
    | "commit"
    | "branch"
    | "envJson"
    | "enabled"
    | "nextBuildAt"
    | "failedMessage"
    | "failedAt"
    | "updatedAt"
  >
>;

/** What handling a tick writes: when the schedule builds next, and how the attempt went. */
export type TickOutcome = Pick<ScheduleDoc, "nextBuildAt" | "failedMessage" | "failedAt"> & { enabled?: boolean };

/** Persistence of schedules. */
export interface ScheduleRepository {
  insert(doc: ScheduleDoc): Promise<void>;
  /** One schedule of a pipeline. */
  find(pipelineId: string, id: string): Promise<ScheduleDoc | null>;
  /** One page of a pipeline's schedules, oldest first. */
  list(pipelineId: string, skip: number, limit: number): Promise<{ items: ScheduleDoc[]; total: number }>;
  count(pipelineId: string): Promise<number>;
  /** Applies the changes; the schedule after them, or null when there is no such schedule. */
  update(pipelineId: string, id: string, changes: ScheduleChangesDoc): Promise<ScheduleDoc | null>;
  /** Deletes a schedule and the ticks it kept. */
  delete(pipelineId: string, id: string): Promise<boolean>;
  /** Enabled schedules whose next build is due at `now`, the longest due first. */
  due(now: Date, limit: number): Promise<ScheduleDoc[]>;
  /** Claims a tick for the caller: true for exactly one caller, ever, per schedule and tick time. */
  claimTick(scheduleId: string, tick: Date, at: Date): Promise<boolean>;
  findTick(scheduleId: string, tick: Date): Promise<ScheduleTickDoc | null>;
  /** Records what a claimed tick made (its build, or null when none), and forgets the schedule's earlier ticks. */
  completeTick(scheduleId: string, tick: Date, buildId: string | null): Promise<void>;
  /**
   * Moves a schedule on from `tick` (compare-and-set on its next build time): false when it is no longer due at that
   * tick, because another ticker moved it on or its owner changed it meanwhile.
   */
  advance(id: string, tick: Date, outcome: TickOutcome): Promise<boolean>;
}

/** A tick's key. */
export function tickKey(scheduleId: string, tick: Date): string {
  return `${scheduleId}/${tick.toISOString()}`;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoScheduleRepository(db: Db): Promise<ScheduleRepository> {
  const schedules: Collection<ScheduleDoc> = db.collection("pipeline_schedules");
  const ticks: Collection<ScheduleTickDoc> = db.collection("pipeline_schedule_ticks");
  await Promise.all([
    schedules.createIndex({ pipelineId: 1, createdAt: 1 }, { name: "pipeline_created" }),
    // The tickers' query: enabled schedules by next build time.
    schedules.createIndex({ enabled: 1, nextBuildAt: 1 }, { name: "enabled_next_build" }),
    ticks.createIndex({ scheduleId: 1, tick: 1 }, { name: "schedule_tick" }),
  ]);

  return {
    async insert(doc) {
      await schedules.insertOne(doc);
    },
    find: (pipelineId, id) => schedules.findOne({ _id: id, pipelineId }),
    async list(pipelineId, skip, limit) {
      const [items, total] = await Promise.all([
        schedules.find({ pipelineId }).sort({ createdAt: 1, _id: 1 }).skip(skip).limit(limit).toArray(),
        schedules.countDocuments({ pipelineId }),
      ]);
      return { items, total };
    },
    count: (pipelineId) => schedules.countDocuments({ pipelineId }),
    update: (pipelineId, id, changes) =>
      schedules.findOneAndUpdate({ _id: id, pipelineId }, { $set: changes }, { returnDocument: "after" }),
    async delete(pipelineId, id) {
      const res = await schedules.deleteOne({ _id: id, pipelineId });
      if (res.deletedCount === 1) await ticks.deleteMany({ scheduleId: id });
      return res.deletedCount === 1;
    },
    due: (now, limit) =>
      schedules
        .find({ enabled: true, nextBuildAt: { $ne: null, $lte: now } })
        .sort({ nextBuildAt: 1 })
        .limit(limit)
        .toArray(),
    async claimTick(scheduleId, tick, at) {
      try {
        await ticks.insertOne({ _id: tickKey(scheduleId, tick), scheduleId, tick, claimedAt: at, buildId: null });
        return true;
      } catch (err) {
        // Another ticker (or this one, before a restart) claimed the tick: the one expected refusal.
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    },
    findTick: (scheduleId, tick) => ticks.findOne({ _id: tickKey(scheduleId, tick) }),
    async completeTick(scheduleId, tick, buildId) {
      await ticks.updateOne({ _id: tickKey(scheduleId, tick) }, { $set: { buildId } });
      await ticks.deleteMany({ scheduleId, tick: { $lt: tick } });
    },
    async advance(id, tick, outcome) {
      const res = await schedules.updateOne({ _id: id, nextBuildAt: tick }, { $set: outcome });
      return res.modifiedCount === 1;
    },
  };
}
