/**
 * The pipeline schedule RPCs (docs/compatibility.md#pipeline-schedules): list, get, create, update and delete a
 * pipeline's schedules. The builds they make are the schedule ticker's (schedules/schedule-ticker.ts).
 */

import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { PipelinesService } from "@conveyor/proto/pipelines";
import { failedPrecondition, invalidFields, newId, notFound, pageWindow } from "@conveyor/runtime";
import {
  checkScheduleFields,
  newScheduleFields,
  SCHEDULE_LIMITS,
  type ScheduleFields,
} from "../domain/schedule-fields.js";
import type { PipelineDoc } from "../store/pipelines-repository.js";
import type { ScheduleDoc } from "../store/schedule-repository.js";
import type { PipelinesContext } from "./pipelines-context.js";
import { scheduleChanges, scheduleMessage } from "./schedule-message.js";

type ScheduleRpcs = Pick<
  ServiceImpl<typeof PipelinesService>,
  | "listPipelineSchedules"
  | "getPipelineSchedule"
  | "createPipelineSchedule"
  | "updatePipelineSchedule"
  | "deletePipelineSchedule"
>;

/** The stored fields of a schedule, as the rules read them. */
function fieldsOf(s: ScheduleDoc): ScheduleFields {
  return {
    label: s.label,
    cronline: s.cronline,
    message: s.message,
    commit: s.commit,
    branch: s.branch,
    env: JSON.parse(s.envJson) as Record<string, string>,
    enabled: s.enabled,
  };
}

/** Checked fields, or InvalidArgument naming every bad one; with when the schedule builds next from `now`. */
function checked(fields: ScheduleFields, now: Date): { nextBuildAt: Date | null } {
  const result = checkScheduleFields(fields);
  if ("problems" in result) throw invalidFields(result.problems);
  return { nextBuildAt: fields.enabled ? result.cron.next(now) : null };
}

/** An archived pipeline is read-only: its schedules may be read and deleted, not made or changed. */
function requireActive(pipeline: PipelineDoc) {
  if (pipeline.archivedAt)
    throw failedPrecondition("Pipeline is archived: unarchive it before changing its schedules.");
}

/** Pipeline schedules. */
export function createScheduleRpcs(ctx: PipelinesContext): ScheduleRpcs {
  const { schedules, now, withLock, requirePipeline } = ctx;

  const requireSchedule = async (pipelineId: string, id: string) => {
    const found = id === "" ? null : await schedules.find(pipelineId, id);
    if (!found) throw notFound("pipeline schedule");
    return found;
  };

  return {
    async listPipelineSchedules(req) {
      const pipeline = await requirePipeline(req.organizationId, req.pipeline);
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await schedules.list(pipeline._id, skip, perPage);
      return { schedules: page.items.map(scheduleMessage), totalCount: page.total };
    },

    async getPipelineSchedule(req) {
      const pipeline = await requirePipeline(req.organizationId, req.pipeline);
      return { schedule: scheduleMessage(await requireSchedule(pipeline._id, req.id)) };
    },

    async createPipelineSchedule(req) {
      const pipeline = await requirePipeline(req.organizationId, req.pipeline);
      requireActive(pipeline);
      const fields = newScheduleFields(scheduleChanges(req.attributes), pipeline.defaultBranch);
      const at = now();
      const { nextBuildAt } = checked(fields, at);
      const creator = req.creator;
      const doc: ScheduleDoc = {
        _id: newId(),
        organizationId: pipeline.organizationId,
        pipelineId: pipeline._id,
        organizationSlug: req.organizationSlug,
        label: fields.label,
        cronline: fields.cronline.trim(),
        message: fields.message,
        commit: fields.commit.trim(),
        branch: fields.branch.trim(),
        envJson: JSON.stringify(fields.env),
        enabled: fields.enabled,
        nextBuildAt,
        failedMessage: null,
        failedAt: null,
        createdAt: at,
        createdBy: {
          id: creator?.id ?? "",
          name: creator?.name ?? "",
          email: creator?.email ?? "",
          avatarUrl: creator?.avatarUrl || null,
          createdAt: creator?.createdAt ? timestampDate(creator.createdAt) : null,
        },
        updatedAt: at,
      };
      // The count and the insert under the pipeline's lock, so one process never goes past the bound.
      await withLock(`schedules:${pipeline._id}`, async () => {
        if ((await schedules.count(pipeline._id)) >= SCHEDULE_LIMITS.perPipeline)
          throw failedPrecondition(`A pipeline can have at most ${SCHEDULE_LIMITS.perPipeline} schedules.`);
        await schedules.insert(doc);
      });
      return { schedule: scheduleMessage(doc) };
    },

    async updatePipelineSchedule(req) {
      const pipeline = await requirePipeline(req.organizationId, req.pipeline);
      requireActive(pipeline);
      const current = await requireSchedule(pipeline._id, req.id);
      const changes = scheduleChanges(req.attributes);
      const fields = { ...fieldsOf(current), ...changes };
      if (changes.commit !== undefined && changes.commit.trim() === "") fields.commit = "HEAD";
      if (changes.branch !== undefined && changes.branch.trim() === "") fields.branch = pipeline.defaultBranch;
      const at = now();
      const { nextBuildAt } = checked(fields, at);
      // The next build time is worked out again only when the line or the switch changed: an edit of the label must
      // not move a tick that is due.
      const retime = fields.cronline.trim() !== current.cronline || fields.enabled !== current.enabled;
      const updated = await schedules.update(pipeline._id, current._id, {
        label: fields.label,
        cronline: fields.cronline.trim(),
        message: fields.message,
        commit: fields.commit.trim(),
        branch: fields.branch.trim(),
        envJson: JSON.stringify(fields.env),
        enabled: fields.enabled,
        ...(retime ? { nextBuildAt } : {}),
        updatedAt: at,
      });
      if (!updated) throw notFound("pipeline schedule");
      return { schedule: scheduleMessage(updated) };
    },

    async deletePipelineSchedule(req) {
      const pipeline = await requirePipeline(req.organizationId, req.pipeline);
      if (req.id === "" || !(await schedules.delete(pipeline._id, req.id))) throw notFound("pipeline schedule");
      return {};
    },
  };
}
