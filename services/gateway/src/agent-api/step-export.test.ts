import { HttpError } from "../errors/http-error.js";
import { checkStepUpdate, stepExport, stepObject } from "./step-export.js";

const step = (extra: Partial<Parameters<typeof stepObject>[0]> = {}) =>
  stepObject({
    id: "s-1",
    key: "tests",
    label: "Tests",
    type: "script",
    state: "running",
    outcome: "neutral",
    definitionJson: JSON.stringify({ type: "script", command: "make test" }),
    ...extra,
  });

const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    if (err instanceof HttpError) return { status: err.statusCode, body: err.body };
    throw err;
  }
  throw new Error("expected a refusal");
};

describe("stepObject", () => {
  it("names the step as Buildkite does", () => {
    expect(step()).toEqual({
      id: "s-1",
      key: "tests",
      label: "Tests",
      type: "command",
      state: "running",
      outcome: "neutral",
      command: "make test",
    });
  });
  it("maps job types to step types, input steps included, and a missing key to null", () => {
    expect(step({ type: "waiter", key: "", definitionJson: "{}" })).toMatchObject({
      type: "wait",
      key: null,
      command: null,
    });
    expect(step({ type: "manual", definitionJson: '{"type":"manual"}' }).type).toBe("block");
    expect(step({ type: "manual", definitionJson: '{"type":"manual","is_input":true}' }).type).toBe("input");
    expect(step({ type: "trigger" }).type).toBe("trigger");
    expect(step({ definitionJson: "not json" }).command).toBeNull();
  });
});

describe("stepExport", () => {
  it("prints an attribute as text, or as JSON with format json", () => {
    expect(stepExport(step(), "label", "")).toBe("Tests");
    expect(stepExport(step(), "state", "")).toBe("running");
    expect(stepExport(step(), "label", "json")).toBe('"Tests"');
    expect(stepExport(step({ key: "" }), "key", "")).toBe("");
    expect(stepExport(step({ key: "" }), "key", "json")).toBe("null");
  });
  it("prints the whole step as JSON only with format json", () => {
    expect(JSON.parse(stepExport(step(), "", "json"))).toMatchObject({ id: "s-1", outcome: "neutral" });
    expect(refusal(() => stepExport(step(), "", ""))).toMatchObject({
      status: 422,
      body: { errors: [{ field: "format" }] },
    });
  });
  it("refuses other formats and attributes it does not serve, naming them", () => {
    expect(refusal(() => stepExport(step(), "label", "yaml"))).toMatchObject({
      body: { errors: [{ field: "format" }] },
    });
    const unknown = refusal(() => stepExport(step(), "agents", ""));
    expect(unknown).toMatchObject({ status: 422, body: { errors: [{ field: "attribute" }] } });
    expect(JSON.stringify(unknown.body)).toContain("agents");
  });
});

describe("checkStepUpdate", () => {
  it("takes label and refuses priority, notify and the rest, naming them", () => {
    expect(() => checkStepUpdate("label")).not.toThrow();
    for (const attribute of ["priority", "notify", "parallelism", "command"]) {
      const r = refusal(() => checkStepUpdate(attribute));
      expect(r.status).toBe(422);
      expect(JSON.stringify(r.body)).toContain(attribute);
    }
  });
});
