import {
  keyIdentity,
  MAX_SECRET_VALUE_BYTES,
  secretDescriptionProblem,
  secretKeyProblem,
  secretValueProblem,
} from "./secret-rules.js";

describe("secret keys", () => {
  it.each(["A", "MY_SECRET", "deploy_key", "a1_b2", "X".repeat(255), "Bkey".replace("B", "C")])("takes %p", (key) => {
    expect(secretKeyProblem(key)).toBeUndefined();
  });

  it.each([
    ["", "can't be blank"],
    ["X".repeat(256), "is too long (maximum is 255 characters)"],
    ["_LEADING", "must start with a letter"],
    ["1ABC", "must start with a letter"],
    ["HAS-DASH", "only letters, numbers and underscores"],
    ["HAS SPACE", "only letters, numbers and underscores"],
    ["ÜMLAUT", "must start with a letter"],
    ["BUILDKITE_TOKEN", "cannot start with buildkite or bk"],
    ["buildkiteish", "cannot start with buildkite or bk"],
    ["BK_KEY", "cannot start with buildkite or bk"],
    ["bKey", "cannot start with buildkite or bk"],
  ])("refuses %p", (key, problem) => {
    expect(secretKeyProblem(key)).toContain(problem);
  });

  it("are one key whatever their case", () => {
    expect(keyIdentity("Deploy_Key")).toBe(keyIdentity("DEPLOY_KEY"));
  });
});

describe("secret values", () => {
  it("take up to 8 KiB of UTF-8", () => {
    expect(secretValueProblem("x".repeat(MAX_SECRET_VALUE_BYTES))).toBeUndefined();
    expect(secretValueProblem("x".repeat(MAX_SECRET_VALUE_BYTES + 1))).toContain("too large");
    // Bytes count, not characters: 4,097 two-byte characters are over the bound.
    expect(secretValueProblem("é".repeat(4097))).toContain("too large");
  });

  it.each(["", "   ", "\n\t"])("refuse a blank value %p", (value) => {
    expect(secretValueProblem(value)).toBe("can't be blank");
  });

  it("bound the description", () => {
    expect(secretDescriptionProblem("d".repeat(1000))).toBeUndefined();
    expect(secretDescriptionProblem("d".repeat(1001))).toContain("too long");
  });
});
