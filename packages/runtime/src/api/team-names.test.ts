import { PipelineAccessLevel, SuiteAccessLevel, TeamMemberRole, TeamPrivacy } from "@conveyor/proto/identity";
import { PIPELINE_ACCESS_LEVELS, SUITE_ACCESS_LEVELS, TEAM_MEMBER_ROLES, TEAM_PRIVACIES } from "./team-names.js";

describe("team enum names", () => {
  it.each([
    ["team member roles", TEAM_MEMBER_ROLES, TeamMemberRole, ["member", "maintainer"]],
    [
      "pipeline access levels",
      PIPELINE_ACCESS_LEVELS,
      PipelineAccessLevel,
      ["read_only", "build_and_read", "manage_build_and_read"],
    ],
    ["suite access levels", SUITE_ACCESS_LEVELS, SuiteAccessLevel, ["read", "edit"]],
    ["team privacies", TEAM_PRIVACIES, TeamPrivacy, ["visible", "secret"]],
  ] as const)("names every value of the %s enum but UNSPECIFIED, both ways", (_, table, proto, names) => {
    expect(table.names).toEqual(names);
    const values = Object.values(proto).filter((v): v is number => typeof v === "number");
    for (const value of values) {
      const name = table.nameOf(value as never);
      if (value === 0) expect(name).toBeUndefined();
      else expect(table.valueOf(name)).toBe(value);
    }
    expect(values.filter((v) => v !== 0)).toHaveLength(names.length);
  });

  it("reads anything but a known name as UNSPECIFIED", () => {
    for (const unknown of ["", "Member", "owner", "__proto__", "toString", 1, null, undefined, ["member"]]) {
      expect(TEAM_MEMBER_ROLES.valueOf(unknown)).toBe(TeamMemberRole.UNSPECIFIED);
    }
    expect(PIPELINE_ACCESS_LEVELS.valueOf("build_and_read")).toBe(PipelineAccessLevel.BUILD_AND_READ);
  });
});
