import {
  deriveSlug,
  MAX_SLUG_LENGTH,
  organizationSlugProblem,
  RESERVED_ORGANIZATION_SLUGS,
  slugProblem,
} from "./slug.js";

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

describe("organizationSlugProblem", () => {
  it("refuses the gateway's own first path segments, which an organization's page would collide with", () => {
    for (const slug of ["v2", "v3", "login", "logout", "assets", "badges", "organizations", "dashboard", "healthz"]) {
      expect([slug, organizationSlugProblem(slug)]).toEqual([slug, "is reserved"]);
    }
  });

  it("accepts other slugs, and gives slugProblem's reasons first", () => {
    expect(organizationSlugProblem("acme")).toBeUndefined();
    expect(organizationSlugProblem("v2-team")).toBeUndefined();
    expect(organizationSlugProblem("Login")).toContain("must start");
  });

  it("keeps the list sorted and every entry a valid slug", () => {
    const list = [...RESERVED_ORGANIZATION_SLUGS];
    expect(list).toEqual([...list].sort());
    for (const slug of list) expect([slug, slugProblem(slug)]).toEqual([slug, undefined]);
  });
});
