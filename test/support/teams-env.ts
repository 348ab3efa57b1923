import { RegistriesService, TeamMemberRole, TeamPrivacy, TeamsService } from "@conveyor/proto/identity";
import { createServiceClient } from "@conveyor/runtime";
import { stack, unique } from "./stack-env.js";

/** A teams client (served by identity), for arranging teams and suites the REST API cannot create. */
export const teams = createServiceClient(TeamsService, stack.identityUrl);

/** A registries client (served by identity), for arranging package registries. */
export const registries = createServiceClient(RegistriesService, stack.identityUrl);

/** Creates a team in an organization, as `ci-admin team create` does, and returns it. */
export async function arrangeTeam(organizationId: string, privacy = TeamPrivacy.VISIBLE) {
  const { team } = await teams.createTeam({ organization: organizationId, name: unique("Team"), privacy });
  if (!team) throw new Error("team arrangement failed");
  return team;
}

/** Adds a user to a team with the given role, as an operator. */
export async function arrangeTeamMember(organizationId: string, teamId: string, userId: string, maintainer = false) {
  await teams.addTeamMember({
    organizationId,
    teamId,
    userId,
    role: maintainer ? TeamMemberRole.MAINTAINER : TeamMemberRole.MEMBER,
  });
}
