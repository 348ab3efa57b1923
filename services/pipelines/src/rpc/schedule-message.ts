import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PipelineScheduleAttributes, PipelineScheduleSchema } from "@conveyor/proto/pipelines";
import { toTimestamp } from "@conveyor/runtime";
import type { ScheduleChanges } from "../domain/schedule-fields.js";
import type { ScheduleDoc } from "../store/schedule-repository.js";

/** A stored schedule as the PipelineSchedule message. */
export function scheduleMessage(s: ScheduleDoc): MessageInitShape<typeof PipelineScheduleSchema> {
  return {
    id: s._id,
    organizationId: s.organizationId,
    pipelineId: s.pipelineId,
    label: s.label,
    cronline: s.cronline,
    message: s.message,
    commit: s.commit,
    branch: s.branch,
    env: JSON.parse(s.envJson) as Record<string, string>,
    enabled: s.enabled,
    nextBuildAt: toTimestamp(s.nextBuildAt),
    failedMessage: s.failedMessage ?? undefined,
    failedAt: toTimestamp(s.failedAt),
    createdAt: toTimestamp(s.createdAt),
    createdBy: {
      id: s.createdBy.id,
      name: s.createdBy.name,
      email: s.createdBy.email,
      avatarUrl: s.createdBy.avatarUrl ?? "",
      createdAt: toTimestamp(s.createdBy.createdAt),
    },
  };
}

/** The attributes a request sets: only those present. */
export function scheduleChanges(a: PipelineScheduleAttributes | undefined): ScheduleChanges {
  if (!a) return {};
  return {
    ...(a.label !== undefined ? { label: a.label } : {}),
    ...(a.cronline !== undefined ? { cronline: a.cronline } : {}),
    ...(a.message !== undefined ? { message: a.message } : {}),
    ...(a.commit !== undefined ? { commit: a.commit } : {}),
    ...(a.branch !== undefined ? { branch: a.branch } : {}),
    ...(a.env !== undefined ? { env: { ...a.env.values } } : {}),
    ...(a.enabled !== undefined ? { enabled: a.enabled } : {}),
  };
}
