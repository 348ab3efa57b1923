import { mayUnblock } from "./unblock-permission.js";

const TEAM_ID = "0b6a52b4-3c8f-4b83-9a5e-0ad6c1a1f0e7";

describe("mayUnblock", () => {
  it("lets anyone who may build unblock a step without allowed_teams, and nobody who may only read", () => {
    for (const allowed of [undefined, [], [""], ["  "]]) {
      expect(mayUnblock(allowed, { teams: [], readOnly: false })).toBe(true);
      expect(mayUnblock(allowed, { teams: ["release"], readOnly: true })).toBe(false);
    }
  });

  it("admits a member of an allowed team by slug or by UUID, even with read-only pipeline access", () => {
    expect(mayUnblock(["release"], { teams: [TEAM_ID, "release"], readOnly: true })).toBe(true);
    expect(mayUnblock([TEAM_ID], { teams: [TEAM_ID, "release"], readOnly: false })).toBe(true);
    expect(mayUnblock(["qa", "release"], { teams: ["release"], readOnly: false })).toBe(true);
  });

  it("refuses everyone outside the allowed teams, builders included", () => {
    expect(mayUnblock(["release"], { teams: [], readOnly: false })).toBe(false);
    expect(mayUnblock(["release"], { teams: ["qa", TEAM_ID], readOnly: false })).toBe(false);
    expect(mayUnblock(["release-managers"], { teams: ["release"], readOnly: false })).toBe(false);
  });

  it("compares names without regard to case or surrounding spaces", () => {
    expect(mayUnblock([" Release "], { teams: ["release"], readOnly: true })).toBe(true);
    expect(mayUnblock([TEAM_ID.toUpperCase()], { teams: [TEAM_ID], readOnly: true })).toBe(true);
  });
});
