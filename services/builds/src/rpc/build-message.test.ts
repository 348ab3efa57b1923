import { aJob } from "../test-support.js";
import { jobMessage } from "./build-message.js";

describe("job messages", () => {
  it("carry a block step's form: its prompt, fields with their defaults, options and rules, and allowed teams", () => {
    const block = aJob({
      type: "manual",
      state: "blocked",
      step: {
        type: "manual",
        label: "Release",
        prompt: "Ship it?",
        submit: "Ship",
        allowed_teams: ["release"],
        fields: [
          { text: "Version", key: "version", hint: "semver", format: "v[0-9.]+", default: "v1.0" },
          {
            select: "Regions",
            key: "regions",
            required: false,
            multiple: true,
            default: ["eu", "us"],
            options: [{ label: "Europe", value: "eu" }, { value: "us" }],
          },
        ],
      },
    });
    expect(jobMessage(block).block).toEqual({
      prompt: "Ship it?",
      submit: "Ship",
      allowedTeams: ["release"],
      fields: [
        {
          key: "version",
          kind: "text",
          label: "Version",
          hint: "semver",
          required: true,
          defaultValues: ["v1.0"],
          format: "v[0-9.]+",
          multiple: false,
          options: [],
        },
        {
          key: "regions",
          kind: "select",
          label: "Regions",
          hint: "",
          required: false,
          defaultValues: ["eu", "us"],
          format: "",
          multiple: true,
          options: [
            { label: "Europe", value: "eu" },
            { label: "us", value: "us" },
          ],
        },
      ],
    });
    expect(jobMessage(aJob()).block).toBeUndefined();
  });

  it("say why a person may not retry the job, or nothing when they may", () => {
    expect(jobMessage(aJob({ state: "failed", exitStatus: 1 })).manualRetryProblem).toBe("");
    expect(jobMessage(aJob({ state: "passed" })).manualRetryProblem).toBe(
      "Only failed, timed out or canceled jobs can be retried",
    );
    expect(jobMessage(aJob({ state: "failed", retried: true })).manualRetryProblem).toBe(
      "This job has already been retried",
    );
  });
});
