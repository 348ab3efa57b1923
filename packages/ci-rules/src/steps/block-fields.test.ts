import { formatProblem, MAX_FORMAT_LENGTH, unblockValues } from "./block-fields.js";
import { parsePipelineYaml } from "./parse-yaml.js";

const release = { text: "Release name", key: "release-name" };
const env = {
  select: "Environment",
  key: "env",
  options: [
    { label: "Staging", value: "staging" },
    { label: "Production", value: "production" },
  ],
};
const regions = {
  select: "Regions",
  key: "regions",
  multiple: true,
  options: [
    { label: "EU", value: "eu" },
    { label: "US", value: "us" },
    { label: "Asia", value: "asia" },
  ],
};

describe("unblockValues", () => {
  it("turns submitted text and select values into meta-data", () => {
    expect(unblockValues([release, env], { "release-name": ["v1.2"], env: ["production"] })).toEqual({
      ok: true,
      metaData: { "release-name": "v1.2", env: "production" },
    });
  });

  it("requires fields by default and names what is missing", () => {
    const result = unblockValues([release, env], { env: ["staging"] });
    expect(result).toEqual({ ok: false, errors: [{ field: "fields.release-name", code: "is required" }] });
  });

  it("treats an empty string as no value", () => {
    expect(unblockValues([release], { "release-name": [""] })).toMatchObject({ ok: false });
  });

  it("leaves optional fields without a value out", () => {
    expect(unblockValues([{ ...release, required: false }], {})).toEqual({ ok: true, metaData: {} });
  });

  it("fills fields left out with their defaults", () => {
    const fields = [
      { ...release, default: "nightly" },
      { ...regions, default: ["eu", "us"] },
    ];
    expect(unblockValues(fields, {})).toEqual({
      ok: true,
      metaData: { "release-name": "nightly", regions: "eu\nus" },
    });
  });

  it("prefers a submitted value over the default", () => {
    expect(unblockValues([{ ...release, default: "nightly" }], { "release-name": ["v2"] })).toEqual({
      ok: true,
      metaData: { "release-name": "v2" },
    });
  });

  it("refuses keys that are not fields of the step", () => {
    const result = unblockValues([release], { "release-name": ["v1"], typo: ["x"] });
    expect(result).toEqual({
      ok: false,
      errors: [{ field: "fields.typo", code: "is not a field of this step (its fields: release-name)" }],
    });
    expect(unblockValues([], { anything: ["x"] })).toEqual({
      ok: false,
      errors: [{ field: "fields.anything", code: "is not a field of this step (it has no fields)" }],
    });
  });

  it("accepts only a select's option values", () => {
    expect(unblockValues([env], { env: ["Production"] })).toEqual({
      ok: false,
      errors: [{ field: "fields.env", code: 'must be one of the field\'s options, got "Production"' }],
    });
  });

  it("takes several values only for multiple selects, stored one per line without repeats", () => {
    expect(unblockValues([env], { env: ["staging", "production"] })).toMatchObject({
      ok: false,
      errors: [{ field: "fields.env" }],
    });
    expect(unblockValues([regions], { regions: ["us", "eu", "us"] })).toEqual({
      ok: true,
      metaData: { regions: "us\neu" },
    });
  });

  it("takes one value for a text field", () => {
    expect(unblockValues([release], { "release-name": ["a", "b"] })).toEqual({
      ok: false,
      errors: [{ field: "fields.release-name", code: "takes one value" }],
    });
  });

  it("checks a text field's format against the whole value", () => {
    const versioned = { ...release, format: "v[0-9]+\\.[0-9]+" };
    expect(unblockValues([versioned], { "release-name": ["v1.2"] })).toMatchObject({ ok: true });
    expect(unblockValues([versioned], { "release-name": ["release v1.2"] })).toEqual({
      ok: false,
      errors: [{ field: "fields.release-name", code: "must match the format v[0-9]+\\.[0-9]+" }],
    });
    expect(unblockValues([versioned], { "release-name": ["v1.2-beta"] })).toMatchObject({ ok: false });
  });

  it("runs a catastrophic pattern on a long value in linear time", () => {
    const field = { ...release, format: "(a+)+$" };
    const value = `${"a".repeat(50_000)}!`;
    const started = performance.now();
    expect(unblockValues([field], { "release-name": [value] })).toMatchObject({ ok: false });
    // A backtracking engine would not finish this in the test's lifetime; RE2 takes milliseconds.
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("matches nothing with a format RE2 cannot run", () => {
    expect(unblockValues([{ ...release, format: "(?=v)v1" }], { "release-name": ["v1"] })).toMatchObject({
      ok: false,
    });
  });

  it("reports every problem at once", () => {
    const result = unblockValues([release, env, regions], { env: ["moon"], regions: [], extra: ["1"] });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors.map((e) => e.field).sort()).toEqual([
      "fields.env",
      "fields.extra",
      "fields.regions",
      "fields.release-name",
    ]);
  });
});

describe("formatProblem", () => {
  it("accepts RE2 patterns", () => {
    expect(formatProblem("[a-z]+-[0-9]{1,3}")).toBeNull();
  });

  it("refuses look-arounds, back-references and broken patterns with a reason", () => {
    expect(formatProblem("(?!main)")).toMatch(/RE2 syntax/);
    expect(formatProblem("(a)\\1")).toMatch(/RE2 syntax/);
    expect(formatProblem("(a")).toMatch(/missing closing/);
  });

  it("bounds the pattern's length", () => {
    expect(formatProblem("a".repeat(MAX_FORMAT_LENGTH + 1))).toMatch(/too long/);
  });

  it("makes the YAML parser refuse a field whose format cannot run", () => {
    const result = parsePipelineYaml(
      "steps:\n  - block: Deploy\n    fields:\n      - text: Version\n        key: version\n        format: '(?<=v)1'\n",
    );
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors[0]).toMatchObject({ field: "configuration.steps[0].fields[0].format" });
  });
});
