import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { TeamMember, TeamPipeline, TeamSuite } from "@conveyor/proto/identity";
import { isoTime, PIPELINE_ACCESS_LEVELS, SUITE_ACCESS_LEVELS, TEAM_MEMBER_ROLES } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { NullableTimestamp, Str, Timestamp as Time } from "./schemas.js";
import type { Urls } from "./urls.js";

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
