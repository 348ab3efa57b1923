import { BUILD_PAGE_JS } from "./build-page-js.js";

describe("the build page's script", () => {
  it("is valid script (its source sits in a template literal, where a stray backquote or ${ would break it)", () => {
    expect(() => new Function(BUILD_PAGE_JS)).not.toThrow();
  });

  it("loads a job's panel from its row's data-panel URL, and opens the job an address names", () => {
    expect(BUILD_PAGE_JS).toContain('details.getAttribute("data-panel")');
    expect(BUILD_PAGE_JS).toContain('window.addEventListener("hashchange", openTarget)');
  });
});
