import { Role } from "@conveyor/proto/identity";
import { isUuid, TEAM_MEMBER_ROLES } from "@conveyor/runtime";
import type { Actor } from "../domain/access-policy.js";
import type { IdentityRepository } from "../store/identity-repository.js";
import type { TeamRepository } from "../store/team-repository.js";
import { roleOf } from "./identity-message.js";

/** Looks up the facts about a requesting user that the access policy judges. */
export function createActors(identity: IdentityRepository, teams?: TeamRepository) {
  /** The user's role in the organization; UNSPECIFIED when not a member. */
  const organizationRole = async (organizationId: string, userId: string): Promise<Role> => {
    const membership = isUuid(userId) ? await identity.findMembership(organizationId, userId) : null;
    return membership ? roleOf(membership.role) : Role.UNSPECIFIED;
  };

  /** The actor of a request, with their role in the team when one is given; an empty id is an operator tool. */
  const actorOf = async (organizationId: string, actorId: string, teamId?: string): Promise<Actor> => {
    if (actorId === "") return { kind: "operator" };
    const role = await organizationRole(organizationId, actorId);
    const membership = teams && teamId && isUuid(actorId) ? await teams.findMember(teamId, actorId) : null;
    if (!membership) return { kind: "user", role };
    return { kind: "user", role, teamRole: TEAM_MEMBER_ROLES.valueOf(membership.role) };
  };

  return { organizationRole, actorOf };
}
