import type { Pipeline, PipelineSchedule } from "@conveyor/proto/pipelines";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { PipelineSummarySchema, type PipelineView, renderCreator, renderPipelineSummary } from "./pipeline.js";
import { Bool, NullableStr, NullableTimestamp, Str, StringMap, Timestamp } from "./schemas.js";
import { graphqlId } from "./urls.js";
import { UserSchema } from "./user.js";

/** A pipeline schedule as Buildkite's REST API answers it (docs/compatibility.md#pipeline-schedules). */
export function renderSchedule(s: PipelineSchedule, pipeline: Pipeline, view: PipelineView): ScheduleBody {
  return {
    id: s.id,
    graphql_id: graphqlId("PipelineSchedule", s.id),
    url: view.urls.api(`organizations/${view.orgSlug}/pipelines/${pipeline.slug}/schedules/${s.id}`),
    label: s.label,
    cronline: s.cronline,
    message: s.message === "" ? null : s.message,
    commit: s.commit,
    branch: s.branch,
    env: s.env,
    enabled: s.enabled,
    next_build_at: isoTime(s.nextBuildAt),
    failed_message: s.failedMessage ?? null,
    failed_at: isoTime(s.failedAt),
    created_at: isoTime(s.createdAt) ?? "",
    created_by: renderCreator(s.createdBy),
    pipeline: renderPipelineSummary(pipeline, view),
  };
}

export const ScheduleSchema = Type.Object(
  {
    id: Str,
    graphql_id: Str,
    url: Str,
    label: Str,
    cronline: Str,
    message: NullableStr,
    commit: Str,
    branch: Str,
    env: StringMap,
    enabled: Bool,
    next_build_at: NullableTimestamp,
    failed_message: NullableStr,
    failed_at: NullableTimestamp,
    created_at: Timestamp,
    created_by: UserSchema,
    pipeline: PipelineSummarySchema,
  },
  { title: "PipelineSchedule" },
);
export type ScheduleBody = Static<typeof ScheduleSchema>;
