import type { ScriptStep } from "@conveyor/ci-rules";
import { type CancelOnFailingJob, cancelOnFailingPlan } from "./cancel-on-failing.js";
import type { JobState } from "./types.js";

const step = (cancel?: boolean): ScriptStep => ({
  type: "script",
  name: "s",
  command: "x",
  agent_query_rules: [],
  ...(cancel === undefined ? {} : { cancel_on_build_failing: cancel }),
});

const job = (id: string, state: JobState, extra: Partial<CancelOnFailingJob> = {}): CancelOnFailingJob => ({
  id,
  type: "script",
  state,
  softFailed: false,
  retried: false,
  step: step(true),
  ...extra,
});

describe("cancelOnFailingPlan", () => {
  it("stops nothing while the build is not failing", () => {
    expect(cancelOnFailingPlan([job("a", "running"), job("b", "passed"), job("c", "scheduled")])).toEqual({
      cancel: [],
      canceling: [],
    });
  });

  it("once a job failed hard: queued jobs of such steps are canceled, those on agents go to canceling", () => {
    const plan = cancelOnFailingPlan([
      job("failed", "failed", { step: step() }),
      job("scheduled", "scheduled"),
      job("assigned", "assigned"),
      job("accepted", "accepted"),
      job("running", "running"),
      job("limited", "limited"),
      job("waiting", "waiting"),
      job("done", "passed"),
    ]);
    expect(plan).toEqual({
      cancel: ["scheduled", "assigned", "limited", "waiting"],
      canceling: ["accepted", "running"],
    });
  });

  it("leaves jobs of steps without it, or with it false", () => {
    expect(
      cancelOnFailingPlan([
        job("failed", "failed", { step: step() }),
        job("plain", "running", { step: step() }),
        job("off", "running", { step: step(false) }),
      ]),
    ).toEqual({ cancel: [], canceling: [] });
  });

  it("a soft failure does not make the build failing", () => {
    expect(cancelOnFailingPlan([job("soft", "failed", { softFailed: true }), job("r", "running")])).toEqual({
      cancel: [],
      canceling: [],
    });
  });

  it("a retried attempt's failure does not count, nor is a retried job stopped", () => {
    expect(cancelOnFailingPlan([job("old", "failed", { retried: true }), job("new", "running")])).toEqual({
      cancel: [],
      canceling: [],
    });
  });

  it("timed out, expired and canceled jobs make the build failing too", () => {
    for (const state of ["timed_out", "expired", "canceled"] as const) {
      expect(cancelOnFailingPlan([job("x", state, { step: step() }), job("r", "running")]).canceling).toEqual(["r"]);
    }
  });
});
