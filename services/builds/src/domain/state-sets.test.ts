import { FINISHED_JOB_STATES, JOB_STATES } from "@conveyor/ci-rules";
import {
  ACTIVE_JOB_STATES,
  BUILD_STARTED_JOB_STATES,
  COUNTED_JOB_STATES,
  PROGRESSING_JOB_STATES,
  RUNNING_JOB_STATES,
  STARTED_ON_AGENT_STATES,
} from "./state-sets.js";

describe("state sets", () => {
  it("counts every unfinished job state in exactly one of the pipeline's job counters", () => {
    const counted = [...COUNTED_JOB_STATES.scheduled, ...COUNTED_JOB_STATES.running, ...COUNTED_JOB_STATES.waiting];
    expect(new Set(counted).size).toBe(counted.length);
    expect([...counted].sort()).toEqual(JOB_STATES.filter((s) => !FINISHED_JOB_STATES.includes(s)).sort());
  });

  it("names what a job on an agent is in: started on it, running on it, held by it", () => {
    expect(STARTED_ON_AGENT_STATES).toEqual(["running", "canceling", "timing_out"]);
    expect(RUNNING_JOB_STATES).toEqual(expect.arrayContaining([...STARTED_ON_AGENT_STATES, "accepted"]));
    expect(ACTIVE_JOB_STATES).toEqual(expect.arrayContaining([...RUNNING_JOB_STATES, "assigned"]));
  });

  it("takes a build as started once an agent took a job or a block step was unblocked, not while queued", () => {
    expect([...BUILD_STARTED_JOB_STATES].sort()).toEqual(
      [...ACTIVE_JOB_STATES, "passed", "failed", "timed_out", "canceled", "expired", "unblocked"].sort(),
    );
    for (const queued of ["pending", "waiting", "scheduled", "limiting", "limited", "blocked"] as const) {
      expect(BUILD_STARTED_JOB_STATES).not.toContain(queued);
    }
    expect([...PROGRESSING_JOB_STATES].sort()).toEqual(
      ["scheduled", ...ACTIVE_JOB_STATES, "limiting", "limited"].sort(),
    );
  });
});
