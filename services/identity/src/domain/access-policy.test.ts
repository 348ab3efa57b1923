import { PipelineAccessLevel, Role, TeamMemberRole, TeamPrivacy } from "@conveyor/proto/identity";
import {
  accessOfLevel,
  canCreateTeam,
  canGivePipelineToTeam,
  canManageOrganizationSettings,
  canManageTeam,
  canSeeTeam,
  effectiveRole,
  organizationPipelineAccess,
  pipelineAccessLevel,
  reachableOrganizations,
} from "./access-policy.js";

const memberships = [
  { organizationId: "o1", role: Role.ADMIN },
  { organizationId: "o2", role: Role.MEMBER },
];

describe("reachableOrganizations", () => {
  it("is every membership when the token has no allow-list", () => {
    expect(reachableOrganizations(memberships, [])).toEqual(memberships);
  });

  it("narrows to the allow-list", () => {
    expect(reachableOrganizations(memberships, ["o2"])).toEqual([{ organizationId: "o2", role: Role.MEMBER }]);
  });

  it("never widens beyond memberships", () => {
    expect(reachableOrganizations(memberships, ["o3"])).toEqual([]);
  });
});

describe("effectiveRole", () => {
  it("treats unspecified as member", () => {
    expect(effectiveRole(Role.UNSPECIFIED)).toBe(Role.MEMBER);
    expect(effectiveRole(Role.ADMIN)).toBe(Role.ADMIN);
  });
});

describe("pipeline access", () => {
  const { ADMIN, MEMBER } = Role;
  const { READ_ONLY, BUILD_AND_READ, MANAGE_BUILD_AND_READ, UNSPECIFIED } = PipelineAccessLevel;
  const allowed = (level: PipelineAccessLevel) => {
    const a = accessOfLevel(level);
    return (["read", "build", "edit"] as const).filter((action) => a[action]);
  };

  // In an organization with teams enabled: who (organization role, team role) × the team's level → actions.
  it.each([
    ["admin", ADMIN, TeamMemberRole.UNSPECIFIED, READ_ONLY, ["read", "build", "edit"]],
    ["admin", ADMIN, TeamMemberRole.UNSPECIFIED, BUILD_AND_READ, ["read", "build", "edit"]],
    ["admin", ADMIN, TeamMemberRole.UNSPECIFIED, MANAGE_BUILD_AND_READ, ["read", "build", "edit"]],
    ["maintainer", MEMBER, TeamMemberRole.MAINTAINER, READ_ONLY, ["read"]],
    ["maintainer", MEMBER, TeamMemberRole.MAINTAINER, BUILD_AND_READ, ["read", "build"]],
    ["maintainer", MEMBER, TeamMemberRole.MAINTAINER, MANAGE_BUILD_AND_READ, ["read", "build", "edit"]],
    ["member", MEMBER, TeamMemberRole.MEMBER, READ_ONLY, ["read"]],
    ["member", MEMBER, TeamMemberRole.MEMBER, BUILD_AND_READ, ["read", "build"]],
    ["member", MEMBER, TeamMemberRole.MEMBER, MANAGE_BUILD_AND_READ, ["read", "build", "edit"]],
  ] as const)("%s of a team with %s… (level %s) may %j", (_who, role, teamRole, level, actions) => {
    const grants = teamRole === TeamMemberRole.UNSPECIFIED ? [] : [{ level, teamRole }];
    expect(allowed(pipelineAccessLevel(role, true, grants))).toEqual(actions);
  });

  it("gives a non-admin nothing on a pipeline none of their teams has, when teams are enabled", () => {
    expect(pipelineAccessLevel(MEMBER, true, [])).toBe(UNSPECIFIED);
    expect(allowed(UNSPECIFIED)).toEqual([]);
  });

  it("takes the highest level of several teams", () => {
    const grants = [
      { level: READ_ONLY, teamRole: TeamMemberRole.MAINTAINER },
      { level: BUILD_AND_READ, teamRole: TeamMemberRole.MEMBER },
    ];
    expect(pipelineAccessLevel(MEMBER, true, grants)).toBe(BUILD_AND_READ);
  });

  it("with teams disabled lets members read and build, admins also edit, and ignores teams", () => {
    expect(allowed(pipelineAccessLevel(MEMBER, false, []))).toEqual(["read", "build"]);
    expect(
      allowed(pipelineAccessLevel(MEMBER, false, [{ level: MANAGE_BUILD_AND_READ, teamRole: TeamMemberRole.MEMBER }])),
    ).toEqual(["read", "build"]);
    expect(allowed(pipelineAccessLevel(ADMIN, false, []))).toEqual(["read", "build", "edit"]);
  });

  it("is organization-wide except for non-admins of organizations with teams enabled, and none for strangers", () => {
    expect(organizationPipelineAccess(ADMIN, true)).toBe(MANAGE_BUILD_AND_READ);
    expect(organizationPipelineAccess(MEMBER, false)).toBe(BUILD_AND_READ);
    expect(organizationPipelineAccess(MEMBER, true)).toBeUndefined();
    expect(organizationPipelineAccess(Role.UNSPECIFIED, true)).toBe(UNSPECIFIED);
  });
});

describe("team rules", () => {
  const operator = { kind: "operator" } as const;
  const user = (role: Role, teamRole?: TeamMemberRole) => ({ kind: "user", role, teamRole }) as const;

  it("shows secret teams only to administrators and the team's members", () => {
    expect(canSeeTeam(user(Role.MEMBER), TeamPrivacy.VISIBLE)).toBe(true);
    expect(canSeeTeam(user(Role.MEMBER), TeamPrivacy.SECRET)).toBe(false);
    expect(canSeeTeam(user(Role.MEMBER, TeamMemberRole.MEMBER), TeamPrivacy.SECRET)).toBe(true);
    expect(canSeeTeam(user(Role.ADMIN), TeamPrivacy.SECRET)).toBe(true);
    expect(canSeeTeam(user(Role.UNSPECIFIED), TeamPrivacy.VISIBLE)).toBe(false);
    expect(canSeeTeam(operator, TeamPrivacy.SECRET)).toBe(true);
  });

  it("lets administrators and maintainers manage a team, not plain members", () => {
    expect(canManageTeam(user(Role.ADMIN))).toBe(true);
    expect(canManageTeam(user(Role.MEMBER, TeamMemberRole.MAINTAINER))).toBe(true);
    expect(canManageTeam(user(Role.MEMBER, TeamMemberRole.MEMBER))).toBe(false);
    expect(canManageTeam(user(Role.MEMBER))).toBe(false);
    expect(canManageTeam(operator)).toBe(true);
  });

  it("lets non-admins give a new pipeline only to teams they belong to", () => {
    expect(canGivePipelineToTeam(user(Role.ADMIN))).toBe(true);
    expect(canGivePipelineToTeam(user(Role.MEMBER, TeamMemberRole.MEMBER))).toBe(true);
    expect(canGivePipelineToTeam(user(Role.MEMBER))).toBe(false);
  });

  it("lets only maintainers (and administrators) give pipelines to a team whose members may not create them", () => {
    expect(canGivePipelineToTeam(user(Role.ADMIN), false)).toBe(true);
    expect(canGivePipelineToTeam(user(Role.MEMBER, TeamMemberRole.MAINTAINER), false)).toBe(true);
    expect(canGivePipelineToTeam(user(Role.MEMBER, TeamMemberRole.MEMBER), false)).toBe(false);
    expect(canGivePipelineToTeam(user(Role.MEMBER, TeamMemberRole.MEMBER), true)).toBe(true);
    expect(canGivePipelineToTeam(user(Role.MEMBER), true)).toBe(false);
  });

  it("lets administrators and operator tools create teams, never members", () => {
    expect(canCreateTeam({ kind: "operator" })).toBe(true);
    expect(canCreateTeam(user(Role.ADMIN))).toBe(true);
    expect(canCreateTeam(user(Role.MEMBER, TeamMemberRole.MAINTAINER))).toBe(false);
    expect(canCreateTeam(user(Role.UNSPECIFIED))).toBe(false);
  });

  it("leaves rules and registry tokens to administrators", () => {
    expect(canManageOrganizationSettings(user(Role.ADMIN))).toBe(true);
    expect(canManageOrganizationSettings(user(Role.MEMBER, TeamMemberRole.MAINTAINER))).toBe(false);
    expect(canManageOrganizationSettings(operator)).toBe(true);
  });
});
