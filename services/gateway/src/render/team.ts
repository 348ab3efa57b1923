import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Team, TeamMember, TeamPipeline, TeamSuite } from "@conveyor/proto/identity";
import {
  isoTime,
  PIPELINE_ACCESS_LEVELS,
  SUITE_ACCESS_LEVELS,
  TEAM_MEMBER_ROLES,
  TEAM_PRIVACIES,
} from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { NullableTimestamp, Str, Timestamp as Time } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";

/** The names a REST body may give for an enum, in words ("a, b or c"), for its schema's description. */
function inWords(names: readonly string[]): string {
  return names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
}
/** "member or maintainer". */
export const TEAM_ROLES_IN_WORDS = inWords(TEAM_MEMBER_ROLES.names);
/** "read_only, build_and_read or manage_build_and_read". */
export const PIPELINE_LEVELS_IN_WORDS = inWords(PIPELINE_ACCESS_LEVELS.names);

/** A team member role from the REST body ("member" or "maintainer"), or UNSPECIFIED, which identity refuses. */
export const teamRoleOf = (value: unknown) => TEAM_MEMBER_ROLES.valueOf(value);
/** A pipeline access level from the REST body, or UNSPECIFIED, which identity refuses. */
export const pipelineLevelOf = (value: unknown) => PIPELINE_ACCESS_LEVELS.valueOf(value);
/** Suite access levels from the REST body (an array of "read" and "edit"); anything but an array is none. */
export const suiteLevelsOf = (value: unknown) =>
  Array.isArray(value) ? value.map((v) => SUITE_ACCESS_LEVELS.valueOf(v)) : [];

/** A timestamp go-buildkite decodes into a non-pointer field: identity always sets it, so a missing one is a bug. */
function requiredTime(ts: Timestamp | undefined): string {
  const iso = isoTime(ts);
  if (iso === null) throw new Error("association without created_at");
  return iso;
}

/** The team member association. */
export function renderTeamMember(m: TeamMember): TeamMemberBody {
  return {
    user_id: m.user?.id ?? "",
    user_name: m.user?.name ?? "",
    role: TEAM_MEMBER_ROLES.nameOf(m.role) ?? "",
    created_at: requiredTime(m.createdAt),
  };
}

export const TeamMemberSchema = Type.Object({ user_id: Str, user_name: Str, role: Str, created_at: Time });
export type TeamMemberBody = Static<typeof TeamMemberSchema>;

/** The team pipeline association; the pipeline URL names it by UUID, which the pipeline routes accept. */
export function renderTeamPipeline(l: TeamPipeline, urls: Urls, orgSlug: string): TeamPipelineBody {
  return {
    pipeline_id: l.pipelineId,
    pipeline_url: urls.api(`organizations/${orgSlug}/pipelines/${l.pipelineId}`),
    access_level: PIPELINE_ACCESS_LEVELS.nameOf(l.accessLevel) ?? "",
    created_at: isoTime(l.createdAt),
  };
}

export const TeamPipelineSchema = Type.Object({
  pipeline_id: Str,
  pipeline_url: Str,
  access_level: Str,
  created_at: NullableTimestamp,
});
export type TeamPipelineBody = Static<typeof TeamPipelineSchema>;

/** The team suite association; access_level is an array, as go-buildkite decodes it. */
export function renderTeamSuite(l: TeamSuite, urls: Urls, orgSlug: string): TeamSuiteBody {
  return {
    suite_id: l.suiteId,
    suite_url: urls.api(`analytics/organizations/${orgSlug}/suites/${l.suiteId}`),
    access_level: l.accessLevels.map((level) => SUITE_ACCESS_LEVELS.nameOf(level) ?? ""),
    created_at: isoTime(l.createdAt),
  };
}

export const TeamSuiteSchema = Type.Object({
  suite_id: Str,
  suite_url: Str,
  access_level: Type.Array(Str),
  created_at: NullableTimestamp,
});
export type TeamSuiteBody = Static<typeof TeamSuiteSchema>;

/** The settings a team body may carry that Conveyor has no use for: false is what happens, true is refused. */
export const UNSUPPORTED_TEAM_SETTINGS = [
  "members_can_create_suites",
  "members_can_create_registries",
  "members_can_destroy_registries",
  "members_can_destroy_packages",
] as const;

/** The Team (Buildkite's teams API; go-buildkite's Team): default teams and the settings above are always false. */
export function renderTeam(t: Team): TeamBody {
  return {
    id: t.id,
    graphql_id: graphqlId("Team", t.id),
    slug: t.slug,
    name: t.name,
    description: t.description,
    privacy: TEAM_PRIVACIES.nameOf(t.privacy) ?? "visible",
    default: false,
    is_default_team: false,
    default_member_role: "member",
    members_can_create_pipelines: t.membersCanCreatePipelines,
    members_can_create_suites: false,
    members_can_create_registries: false,
    members_can_destroy_registries: false,
    members_can_destroy_packages: false,
    created_at: isoTime(t.createdAt),
    created_by: null,
  };
}

export const TeamSchema = Type.Object({
  id: Str,
  graphql_id: Str,
  slug: Str,
  name: Str,
  description: Str,
  privacy: Str,
  default: Type.Boolean(),
  is_default_team: Type.Boolean(),
  default_member_role: Str,
  members_can_create_pipelines: Type.Boolean(),
  members_can_create_suites: Type.Boolean(),
  members_can_create_registries: Type.Boolean(),
  members_can_destroy_registries: Type.Boolean(),
  members_can_destroy_packages: Type.Boolean(),
  created_at: NullableTimestamp,
  created_by: Type.Null(),
});
export type TeamBody = Static<typeof TeamSchema>;
