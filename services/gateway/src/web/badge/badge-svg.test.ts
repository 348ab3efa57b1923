import { badgeStatus, badgeSvg } from "./badge-svg.js";

describe("badges", () => {
  it("maps build states to the four badge statuses", () => {
    expect(
      [
        "passed",
        "failed",
        "failing",
        "running",
        "scheduled",
        "blocked",
        "canceling",
        "canceled",
        "skipped",
        undefined,
      ].map(badgeStatus),
    ).toEqual([
      "passing",
      "failing",
      "failing",
      "running",
      "running",
      "running",
      "running",
      "unknown",
      "unknown",
      "unknown",
    ]);
  });

  it("draws an SVG naming the status, with its colour, and escapes the label", () => {
    const svg = badgeSvg("failing", `<b>"x"`);
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="\d+" height="20"/);
    expect(svg).toContain('fill="#e05d44"');
    expect(svg).toContain("&lt;b&gt;&quot;x&quot;: failing");
    expect(svg).not.toContain("<b>");
  });
});
