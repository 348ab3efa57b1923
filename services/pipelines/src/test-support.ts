/** Fixtures for the pipelines service's tests: a stored schedule with every field filled, overridable. */
import type { ScheduleDoc } from "./store/schedule-repository.js";

/** An enabled hourly schedule of pipeline p-1 in organization o-1, due at 2026-03-01T10:00Z. */
export function aSchedule(overrides: Partial<ScheduleDoc> = {}): ScheduleDoc {
  return {
    _id: "s-1",
    organizationId: "o-1",
    pipelineId: "p-1",
    organizationSlug: "acme",
    label: "Hourly",
    cronline: "@hourly",
    message: "Scheduled",
    commit: "HEAD",
    branch: "main",
    envJson: JSON.stringify({ NIGHTLY: "1" }),
    enabled: true,
    nextBuildAt: new Date("2026-03-01T10:00:00.000Z"),
    failedMessage: null,
    failedAt: null,
    createdAt: new Date("2026-02-01T00:00:00Z"),
    createdBy: { id: "u-1", name: "U", email: "u@x", avatarUrl: null, createdAt: null },
    updatedAt: new Date("2026-02-01T00:00:00Z"),
    ...overrides,
  };
}
