/**
 * The teams service's stored documents as proto messages; stored names become proto enums through the shared
 * tables of `@conveyor/runtime` (api/team-names.ts).
 */

import type { TeamPrivacy } from "@conveyor/proto/identity";
import { PIPELINE_ACCESS_LEVELS, SUITE_ACCESS_LEVELS, TEAM_PRIVACIES, toTimestamp } from "@conveyor/runtime";
import type { SuiteDoc, TeamDoc, TeamPipelineDoc, TeamSuiteDoc } from "../store/team-repository.js";

/** The proto privacy of a stored team. */
export const privacyOf = (team: Pick<TeamDoc, "privacy">): TeamPrivacy => TEAM_PRIVACIES.valueOf(team.privacy);

/** The Team message of a stored team. */
export const teamMessage = (t: TeamDoc) => ({
  id: t._id,
  organizationId: t.organizationId,
  slug: t.slug,
  name: t.name,
  description: t.description,
  privacy: privacyOf(t),
  createdAt: toTimestamp(t.createdAt),
  membersCanCreatePipelines: t.membersCanCreatePipelines ?? true,
});

/** The Suite message of a stored suite. */
export const suiteMessage = (s: SuiteDoc) => ({
  id: s._id,
  organizationId: s.organizationId,
  slug: s.slug,
  name: s.name,
  createdAt: toTimestamp(s.createdAt),
});

/** The TeamPipeline message of a stored association. */
export const teamPipelineMessage = (l: TeamPipelineDoc) => ({
  teamId: l.teamId,
  pipelineId: l.pipelineId,
  accessLevel: PIPELINE_ACCESS_LEVELS.valueOf(l.accessLevel),
  createdAt: toTimestamp(l.createdAt),
});

/** The TeamSuite message of a stored association. */
export const teamSuiteMessage = (l: TeamSuiteDoc) => ({
  teamId: l.teamId,
  suiteId: l.suiteId,
  accessLevels: l.accessLevels.map((level) => SUITE_ACCESS_LEVELS.valueOf(level)),
  createdAt: toTimestamp(l.createdAt),
});
