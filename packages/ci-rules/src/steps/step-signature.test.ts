import { parsePipelineYaml } from "./parse-yaml.js";
import type { ScriptStep } from "./step.js";

const SIGNATURE = {
  algorithm: "EdDSA",
  signed_fields: ["command", "env", "matrix", "plugins", "repository_url"],
  value: "eyJhbGciOiJFZERTQSJ9..c2ln",
};

function parse(step: Record<string, unknown>) {
  return parsePipelineYaml(JSON.stringify({ steps: [step] }));
}

function only(step: Record<string, unknown>): ScriptStep {
  const result = parse(step);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.steps[0] as ScriptStep;
}

function fieldsOf(step: Record<string, unknown>): string[] {
  const result = parse(step);
  return result.ok ? [] : result.errors.map((e) => e.field);
}

describe("a command step's signature", () => {
  it("keeps a signed step exactly as uploaded, its signature included", () => {
    const uploaded = {
      command: "echo {{matrix}}",
      env: { A: "1" },
      matrix: ["x", "y"],
      signature: SIGNATURE,
      key: "k",
    };
    const step = only(uploaded);
    expect(step.signed).toEqual({ signature: SIGNATURE, step: uploaded });
  });

  it("leaves unsigned steps without one", () => {
    expect(only({ command: "true" }).signed).toBeUndefined();
  });

  it("refuses a malformed signature naming the field, and keeps nothing of it", () => {
    expect(fieldsOf({ command: "x", signature: "abc" })).toEqual(["configuration.steps[0].signature"]);
    expect(fieldsOf({ command: "x", signature: { ...SIGNATURE, value: "" } })).toEqual([
      "configuration.steps[0].signature.value",
    ]);
    expect(fieldsOf({ command: "x", signature: { ...SIGNATURE, signed_fields: [] } })).toEqual([
      "configuration.steps[0].signature.signed_fields",
    ]);
    expect(fieldsOf({ command: "x", signature: { ...SIGNATURE, signed_fields: ["command", 3] } })).toEqual([
      "configuration.steps[0].signature.signed_fields[1]",
    ]);
    expect(fieldsOf({ command: "x", signature: { ...SIGNATURE, extra: true } })).toEqual([
      "configuration.steps[0].signature.extra",
    ]);
    expect(fieldsOf({ command: "x", signature: { ...SIGNATURE, algorithm: "A".repeat(33) } })).toEqual([
      "configuration.steps[0].signature.algorithm",
    ]);
    expect(fieldsOf({ command: "x", signature: { ...SIGNATURE, value: "v".repeat(16_385) } })).toEqual([
      "configuration.steps[0].signature.value",
    ]);
  });

  it("is not an attribute of other kinds of step", () => {
    expect(fieldsOf({ wait: null, signature: SIGNATURE })).toEqual(["configuration.steps[0].signature"]);
  });
});
