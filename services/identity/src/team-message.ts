/**
 * The teams service's stored names as proto enums and its stored documents as proto messages.
 */

import { PipelineAccessLevel, SuiteAccessLevel, TeamMemberRole, TeamPrivacy } from "@conveyor/proto/identity";
import { toTimestamp } from "@conveyor/runtime";
import type {
  PipelineLevelName,
  SuiteDoc,
  SuiteLevelName,
  TeamDoc,
  TeamPipelineDoc,
  TeamPrivacyName,
  TeamRoleName,
  TeamSuiteDoc,
} from "./team-repository.js";

export const ROLE_NAMES: Record<TeamMemberRole, TeamRoleName | undefined> = {
  [TeamMemberRole.UNSPECIFIED]: undefined,
  [TeamMemberRole.MEMBER]: "member",
  [TeamMemberRole.MAINTAINER]: "maintainer",
};
export const ROLES: Record<TeamRoleName, TeamMemberRole> = {
  member: TeamMemberRole.MEMBER,
  maintainer: TeamMemberRole.MAINTAINER,
};
export const LEVEL_NAMES: Record<PipelineAccessLevel, PipelineLevelName | undefined> = {
  [PipelineAccessLevel.UNSPECIFIED]: undefined,
  [PipelineAccessLevel.READ_ONLY]: "read_only",
  [PipelineAccessLevel.BUILD_AND_READ]: "build_and_read",
  [PipelineAccessLevel.MANAGE_BUILD_AND_READ]: "manage_build_and_read",
};
export const LEVELS: Record<PipelineLevelName, PipelineAccessLevel> = {
  read_only: PipelineAccessLevel.READ_ONLY,
  build_and_read: PipelineAccessLevel.BUILD_AND_READ,
  manage_build_and_read: PipelineAccessLevel.MANAGE_BUILD_AND_READ,
};
const SUITE_LEVELS: Record<SuiteLevelName, SuiteAccessLevel> = {
  read: SuiteAccessLevel.READ,
  edit: SuiteAccessLevel.EDIT,
};
export const PRIVACIES: Record<TeamPrivacyName, TeamPrivacy> = {
  visible: TeamPrivacy.VISIBLE,
  secret: TeamPrivacy.SECRET,
};

export const teamMessage = (t: TeamDoc) => ({
  id: t._id,
  organizationId: t.organizationId,
  slug: t.slug,
  name: t.name,
  description: t.description,
  privacy: PRIVACIES[t.privacy],
  createdAt: toTimestamp(t.createdAt),
});

export const suiteMessage = (s: SuiteDoc) => ({
  id: s._id,
  organizationId: s.organizationId,
  slug: s.slug,
  name: s.name,
  createdAt: toTimestamp(s.createdAt),
});

export const teamPipelineMessage = (l: TeamPipelineDoc) => ({
  teamId: l.teamId,
  pipelineId: l.pipelineId,
  accessLevel: LEVELS[l.accessLevel],
  createdAt: toTimestamp(l.createdAt),
});

export const teamSuiteMessage = (l: TeamSuiteDoc) => ({
  teamId: l.teamId,
  suiteId: l.suiteId,
  accessLevels: l.accessLevels.map((level) => SUITE_LEVELS[level]),
  createdAt: toTimestamp(l.createdAt),
});

/** Suite access levels as stored: each once, read before edit; undefined when empty or any is unspecified. */
export function suiteLevelNames(levels: readonly SuiteAccessLevel[]): SuiteLevelName[] | undefined {
  if (levels.length === 0 || levels.some((l) => l !== SuiteAccessLevel.READ && l !== SuiteAccessLevel.EDIT)) {
    return undefined;
  }
  return (["read", "edit"] as const).filter((name) => levels.includes(SUITE_LEVELS[name]));
}
