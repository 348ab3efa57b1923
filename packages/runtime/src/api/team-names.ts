/**
 * The names the REST API, the database and the operator CLI give to the team enums of the identity proto (a team
 * member's role, a pipeline or suite access level, a team's privacy): one table per enum, so that every process
 * spells them the same. UNSPECIFIED has no name.
 */

import { PipelineAccessLevel, SuiteAccessLevel, TeamMemberRole, TeamPrivacy } from "@conveyor/proto/identity";
import { enumNames } from "./enum-names.js";

/** A team member's role: "member" or "maintainer". */
export const TEAM_MEMBER_ROLES = enumNames(TeamMemberRole.UNSPECIFIED, {
  member: TeamMemberRole.MEMBER,
  maintainer: TeamMemberRole.MAINTAINER,
});

/** The access a team has to a pipeline, lowest first. */
export const PIPELINE_ACCESS_LEVELS = enumNames(PipelineAccessLevel.UNSPECIFIED, {
  read_only: PipelineAccessLevel.READ_ONLY,
  build_and_read: PipelineAccessLevel.BUILD_AND_READ,
  manage_build_and_read: PipelineAccessLevel.MANAGE_BUILD_AND_READ,
});

/** One access a team has to a suite (a team holds a list of them). */
export const SUITE_ACCESS_LEVELS = enumNames(SuiteAccessLevel.UNSPECIFIED, {
  read: SuiteAccessLevel.READ,
  edit: SuiteAccessLevel.EDIT,
});

/** Who sees a team: every member of the organization ("visible"), or only its members and administrators. */
export const TEAM_PRIVACIES = enumNames(TeamPrivacy.UNSPECIFIED, {
  visible: TeamPrivacy.VISIBLE,
  secret: TeamPrivacy.SECRET,
});

/** A team member role's name. */
export type TeamRoleName = (typeof TEAM_MEMBER_ROLES.names)[number];
/** A pipeline access level's name. */
export type PipelineLevelName = (typeof PIPELINE_ACCESS_LEVELS.names)[number];
/** A suite access level's name. */
export type SuiteLevelName = (typeof SUITE_ACCESS_LEVELS.names)[number];
/** A team privacy's name. */
export type TeamPrivacyName = (typeof TEAM_PRIVACIES.names)[number];
