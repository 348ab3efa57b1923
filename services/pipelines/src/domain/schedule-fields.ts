/**
 * What a pipeline schedule is made of and the rules its fields follow (docs/compatibility.md#pipeline-schedules,
 * docs/limits.md): defaults, bounds, and the one place a create or an update is checked.
 */

import { envProblems, type FieldProblem, TEXT_LIMITS, textProblem } from "@conveyor/runtime";
import { type Cronline, parseCronline } from "./cronline.js";

/** Bounds of schedules: how many a pipeline holds, and their text. */
export const SCHEDULE_LIMITS = {
  /** Schedules per pipeline. */
  perPipeline: 50,
  /** A label (characters). */
  label: TEXT_LIMITS.name,
  /** The message of the builds a schedule creates (bytes), as a build's. */
  messageBytes: TEXT_LIMITS.messageBytes,
} as const;

/** The fields a client sets on a schedule. */
export interface ScheduleFields {
  label: string;
  cronline: string;
  message: string;
  commit: string;
  branch: string;
  env: Record<string, string>;
  enabled: boolean;
}

/** What a create or an update says: the fields present. */
export type ScheduleChanges = Partial<ScheduleFields>;

/** A new schedule's fields: the request's, with Buildkite's defaults (commit HEAD, the pipeline's branch, enabled). */
export function newScheduleFields(changes: ScheduleChanges, defaultBranch: string): ScheduleFields {
  return {
    label: changes.label ?? "",
    cronline: changes.cronline ?? "",
    message: changes.message ?? "",
    commit: changes.commit === undefined || changes.commit.trim() === "" ? "HEAD" : changes.commit,
    branch: changes.branch === undefined || changes.branch.trim() === "" ? defaultBranch : changes.branch,
    env: changes.env ?? {},
    enabled: changes.enabled ?? true,
  };
}

/**
 * Checks a schedule's fields as they would be stored: the parsed cron line, or every problem found (422 field
 * errors). Labels, commits and branches are one line; the message may span lines; env as a build's.
 */
export function checkScheduleFields(fields: ScheduleFields): { cron: Cronline } | { problems: FieldProblem[] } {
  const problems: FieldProblem[] = [];
  const text = (field: string, value: string, rule: Parameters<typeof textProblem>[1]) => {
    const problem = textProblem(value, rule);
    if (problem) problems.push({ field, code: problem });
  };
  if (fields.label.trim() === "") problems.push({ field: "label", code: "can't be blank" });
  else text("label", fields.label, { max: SCHEDULE_LIMITS.label });
  const cron = parseCronline(fields.cronline);
  if (typeof cron === "string") problems.push({ field: "cronline", code: cron });
  text("message", fields.message, { max: SCHEDULE_LIMITS.messageBytes, bytes: true, multiline: true });
  text("commit", fields.commit.trim(), { max: TEXT_LIMITS.branch });
  if (fields.branch.trim() === "") problems.push({ field: "branch", code: "can't be blank" });
  else text("branch", fields.branch.trim(), { max: TEXT_LIMITS.branch });
  problems.push(...envProblems(fields.env, "env", { names: "any" }));
  return problems.length > 0 || typeof cron === "string" ? { problems } : { cron };
}

/**
 * When a schedule builds next after the tick at `tick` was handled at `now`: the first time after both, so ticks
 * missed while nothing ran are built once, not once each.
 */
export function nextBuildAfterTick(cron: Cronline, tick: Date, now: Date): Date | null {
  return cron.next(now > tick ? now : tick);
}
