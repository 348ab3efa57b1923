import { skipMarkerIn } from "./skip-markers.js";

describe("skipMarkerIn", () => {
  it.each([
    ["Fix typo [ci skip]", "[ci skip]"],
    ["[skip ci] docs", "[skip ci]"],
    ["docs\n\n[ci-skip]\n", "[ci-skip]"],
    ["[skip-ci]", "[skip-ci]"],
    ["[SKIP CI] loud", "[SKIP CI]"],
  ])("finds the marker in %j", (text, marker) => {
    expect(skipMarkerIn(text)).toBe(marker);
  });

  it.each(["skip ci", "[skip  ci]", "(ci skip)", "[ci skipped]", ""])("finds none in %j", (text) => {
    expect(skipMarkerIn(text)).toBeNull();
  });
});
