/**
 * What the parts of the teams service share: its dependencies, the validation answers, and the team and
 * team-access lookups their RPCs start with.
 */

import { Code, ConnectError } from "@connectrpc/connect";
import { type PipelineAccessLevel, TeamMemberRole } from "@conveyor/proto/identity";
import {
  createKeyedLock,
  isUuid,
  type KeyedLock,
  notFound,
  PIPELINE_ACCESS_LEVELS,
  permissionDenied,
  SUITE_ACCESS_LEVELS,
  TEAM_MEMBER_ROLES,
} from "@conveyor/runtime";
import { canManageTeam, canSeeTeam } from "../domain/access-policy.js";
import type { IdentityRepository } from "../store/identity-repository.js";
import type { TeamRepository } from "../store/team-repository.js";
import { createActors } from "./actors.js";
import { privacyOf } from "./team-message.js";

/** What the teams service is made of. */
export interface TeamsContextDeps {
  identity: IdentityRepository;
  teams: TeamRepository;
  /**
   * Serializes read-check-write sections per team (the last-maintainer rule). A process-local keyed lock when
   * absent; main.ts gives a lease lock in MongoDB, so that the rule holds across replicas.
   */
  lock?: KeyedLock;
  now: () => Date;
}

/** InvalidArgument in the form the team association routes answer: "Validation failed: <reasons>". */
export function validationFailed(reasons: string[]): ConnectError {
  return new ConnectError(`Validation failed: ${reasons.join(", ")}`, Code.InvalidArgument);
}

// The reasons the team association RPCs give, in the words of Buildkite's answers.
/** "a, b or c": how a problem lists a table's names. */
const oneOf = (names: readonly string[]) => `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
export const ROLE_PROBLEM = `Role must be ${oneOf(TEAM_MEMBER_ROLES.names)}`;
export const LEVEL_PROBLEM = `Access level must be ${oneOf(PIPELINE_ACCESS_LEVELS.names)}`;
export const SUITE_LEVEL_PROBLEM = `Access level must be a list of ${SUITE_ACCESS_LEVELS.names.join(" and ")}`;
export const LAST_MAINTAINER = "a team needs at least one maintainer";

/** The dependencies and lookups every part of the teams service works with; one per service. */
export function createTeamsContext(deps: TeamsContextDeps) {
  const { identity, teams, now } = deps;
  // Serializes read-check-write sections per team (the last-maintainer rule); see createKeyedLock for why.
  const withLock = deps.lock ?? createKeyedLock();

  const { organizationRole, actorOf } = createActors(identity, teams);

  /** The team and the actor; a team the actor may not see does not exist for them. */
  const visibleTeam = async (req: { organizationId: string; actorId: string; teamId: string }) => {
    const team = isUuid(req.teamId) ? await teams.findTeam(req.organizationId, req.teamId) : null;
    if (!team) throw notFound("team");
    const actor = await actorOf(req.organizationId, req.actorId, team._id);
    if (!canSeeTeam(actor, privacyOf(team))) throw notFound("team");
    return { team, actor };
  };

  /** The team, when the actor may also change it. */
  const manageableTeam = async (req: { organizationId: string; actorId: string; teamId: string }) => {
    const found = await visibleTeam(req);
    if (!canManageTeam(found.actor)) throw permissionDenied();
    return found.team;
  };

  /** The levels a user's teams grant on pipelines of some organizations, highest per pipeline. */
  const teamLevels = async (organizationIds: readonly string[], userId: string, pipelineIds?: readonly string[]) => {
    const memberships = isUuid(userId) ? await teams.membershipsOfUser(organizationIds, userId) : [];
    const links =
      memberships.length === 0
        ? []
        : await teams.pipelinesOfTeams(
            memberships.map((m) => m.teamId),
            pipelineIds,
          );
    const roleInTeam = new Map(memberships.map((m) => [m.teamId, TEAM_MEMBER_ROLES.valueOf(m.role)]));
    const grants = new Map<string, Array<{ level: PipelineAccessLevel; teamRole: TeamMemberRole }>>();
    for (const link of links) {
      const list = grants.get(link.pipelineId) ?? [];
      list.push({
        level: PIPELINE_ACCESS_LEVELS.valueOf(link.accessLevel),
        teamRole: roleInTeam.get(link.teamId) ?? TeamMemberRole.MEMBER,
      });
      grants.set(link.pipelineId, list);
    }
    return grants;
  };

  return { identity, teams, now, withLock, organizationRole, actorOf, visibleTeam, manageableTeam, teamLevels };
}

export type TeamsContext = ReturnType<typeof createTeamsContext>;
