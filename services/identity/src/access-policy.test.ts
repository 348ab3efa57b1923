import { Role } from "@conveyor/proto/identity";
import { effectiveRole, reachableOrganizations } from "./access-policy.js";

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
