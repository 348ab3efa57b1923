import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import { encodeEvent, SUBJECTS } from "@conveyor/runtime";
import type { PipelineCountsDoc } from "../store/pipelines-repository.js";
import { pipelineCountsHandler } from "./counts-consumer.js";

const at = new Date("2026-03-01T00:00:00Z");

function world() {
  const stored: Array<{ id: string; counts: PipelineCountsDoc; at: Date }> = [];
  const warnings: string[] = [];
  const handle = pipelineCountsHandler(
    {
      async setCounts(id, counts, when) {
        stored.push({ id, counts, at: when });
      },
    },
    { warn: (_fields: unknown, msg?: string) => void warnings.push(msg ?? "") },
  );
  return { stored, warnings, handle };
}

const snapshot = (init: { pipelineId?: string; at?: Date; runningJobs?: number }) =>
  encodeEvent(SUBJECTS.builds.pipelineCountsChanged, PipelineCountsChangedSchema, {
    ...(init.pipelineId ? { pipelineId: init.pipelineId } : {}),
    ...(init.at ? { at: timestampFromDate(init.at) } : {}),
    runningJobs: init.runningJobs ?? 0,
  }).data;

describe("the pipelines service's consumer of counter snapshots", () => {
  it("stores a snapshot's counters with the time it was taken", async () => {
    const w = world();
    await w.handle(snapshot({ pipelineId: "p", at, runningJobs: 3 }));
    expect(w.stored).toEqual([
      {
        id: "p",
        at,
        counts: { scheduledBuilds: 0, runningBuilds: 0, scheduledJobs: 0, runningJobs: 3, waitingJobs: 0 },
      },
    ]);
    expect(w.warnings).toEqual([]);
  });

  it("logs and drops a snapshot without its pipeline or its time", async () => {
    const w = world();
    await w.handle(snapshot({ at, runningJobs: 3 }));
    await w.handle(snapshot({ pipelineId: "p", runningJobs: 3 }));
    expect(w.stored).toEqual([]);
    expect(w.warnings).toEqual([
      "pipeline counts snapshot without its pipeline or time: dropped",
      "pipeline counts snapshot without its pipeline or time: dropped",
    ]);
  });
});
