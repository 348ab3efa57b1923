import { DEFAULT_NEXT, nextPath } from "./next-path.js";

describe("nextPath", () => {
  it("keeps a path of this site with its query and fragment", () => {
    expect(nextPath("/acme")).toBe("/acme");
    expect(nextPath("/acme/web/builds/7?x=1#job-1")).toBe("/acme/web/builds/7?x=1#job-1");
    expect(nextPath("/acme/../other")).toBe("/other");
  });

  it.each([
    undefined,
    42,
    "",
    "acme",
    "https://evil.example/",
    "//evil.example",
    "/\\evil.example",
    "/\t/evil.example",
    "/\n/evil.example",
    "javascript:alert(1)",
    "/login",
    "/login?next=/acme",
    "/login/link/cvl_x",
    "/logout",
  ])("sends %p to the dashboard", (next) => {
    expect(nextPath(next)).toBe(DEFAULT_NEXT);
  });
});
