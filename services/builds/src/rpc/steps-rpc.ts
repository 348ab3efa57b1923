import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { BuildsService, StepRef, StepSchema } from "@conveyor/proto/builds";
import { invalidFields } from "@conveyor/runtime";
import type { Job } from "../domain/job.js";
import { stepOutcome, stepState } from "../domain/steps.js";
import type { PromisedFailures } from "../jobs/promised-failures.js";
import type { StepActions } from "../jobs/step-actions.js";
import { jobMessage } from "./build-message.js";

export type StepRpcs = Pick<
  ServiceImpl<typeof BuildsService>,
  "getStep" | "updateStep" | "cancelStep" | "promiseJobFailure"
>;

/** A step's jobs (in order, at least one) as the Step message; its label, key and type are its latest job's. */
export function stepMessage(jobs: readonly Job[]): MessageInitShape<typeof StepSchema> {
  const current = jobs.filter((j) => !j.retried);
  const shown = current[current.length - 1] ?? jobs[jobs.length - 1];
  return {
    id: shown?.stepId ?? "",
    key: shown?.stepKey ?? "",
    label: shown?.label ?? "",
    type: shown?.type ?? "",
    state: stepState(jobs),
    outcome: stepOutcome(jobs),
    definitionJson: JSON.stringify(shown?.step ?? {}),
    jobs: current.map(jobMessage),
  };
}

/** The step reference of a request, both parts required. */
function ref(r: StepRef | undefined) {
  const problems = [
    ...(r?.jobId ? [] : [{ field: "job_id", code: "is required" }]),
    ...(r?.step ? [] : [{ field: "step", code: "is required" }]),
  ];
  if (problems.length > 0) throw invalidFields(problems);
  return { jobId: r?.jobId ?? "", step: r?.step ?? "" };
}

/** The steps a running job's agent reads, relabels and cancels (`buildkite-agent step …`), and its promised failure. */
export function createStepRpcs(steps: StepActions, promiseFailure: PromisedFailures): StepRpcs {
  return {
    async promiseJobFailure(req) {
      return { job: jobMessage(await promiseFailure(req.jobId, req.exitStatus, req.reason)) };
    },

    async getStep(req) {
      return { step: stepMessage(await steps.get(ref(req.ref))) };
    },

    async updateStep(req) {
      const jobs = await steps.updateLabel(ref(req.ref), req.label, {
        append: req.append,
        uuid: req.idempotencyUuid,
      });
      return { step: stepMessage(jobs) };
    },

    async cancelStep(req) {
      return { step: stepMessage(await steps.cancel(ref(req.ref))) };
    },
  };
}
