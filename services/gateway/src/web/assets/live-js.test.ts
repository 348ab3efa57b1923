import { FINISHED_BUILD_STATES } from "@conveyor/ci-rules";
import { LIVE_JS } from "./live-js.js";

describe("the live updates script", () => {
  it("is valid script (its source sits in a template literal, where a stray backquote or ${ would break it)", () => {
    expect(() => new Function(LIVE_JS)).not.toThrow();
  });

  it("knows the finished build states from the one table", () => {
    expect(LIVE_JS).toContain(`var FINISHED = ${JSON.stringify(FINISHED_BUILD_STATES)};`);
  });
});
