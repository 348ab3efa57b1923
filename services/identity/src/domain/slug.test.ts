import { deriveSlug, MAX_SLUG_LENGTH, slugProblem } from "./slug.js";

describe("deriveSlug", () => {
  it.each([
    ["Acme Inc", "acme-inc"],
    ["My   Great    Org", "my-great-org"],
    ["  Leading and trailing  ", "leading-and-trailing"],
    ["UPPER lower", "upper-lower"],
    ["Crème Brûlée", "creme-brulee"],
    ["a/b_c.d", "a-b-c-d"],
    ["!!!", ""],
  ])("%s → %s", (name, slug) => {
    expect(deriveSlug(name)).toBe(slug);
  });

  it("caps the length without leaving a trailing hyphen", () => {
    const slug = deriveSlug(`${"a".repeat(MAX_SLUG_LENGTH - 1)} b`);
    expect(slug.length).toBeLessThanOrEqual(MAX_SLUG_LENGTH);
    expect(slug.endsWith("-")).toBe(false);
  });
});

describe("slugProblem", () => {
  it("accepts alphanumerics and hyphens that start with an alphanumeric", () => {
    expect(slugProblem("acme-inc-2")).toBeUndefined();
    expect(slugProblem("9lives")).toBeUndefined();
  });

  it.each([
    ["", "can't be blank"],
    ["-acme", "must start"],
    ["Acme", "must start"],
    ["acme inc", "must start"],
    ["a".repeat(MAX_SLUG_LENGTH + 1), "too long"],
  ])("rejects %j", (slug, reason) => {
    expect(slugProblem(slug)).toContain(reason);
  });
});
