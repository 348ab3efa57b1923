import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  PipelineAccessLevel,
  SuiteAccessLevel,
  type TeamMember,
  TeamMemberRole,
  type TeamPipeline,
  type TeamSuite,
} from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { NullableTimestamp, Str, Timestamp as Time } from "./schemas.js";
import type { Urls } from "./urls.js";

const ROLE_NAMES: Record<TeamMemberRole, string> = {
  [TeamMemberRole.UNSPECIFIED]: "",
  [TeamMemberRole.MEMBER]: "member",
  [TeamMemberRole.MAINTAINER]: "maintainer",
};
const LEVEL_NAMES: Record<PipelineAccessLevel, string> = {
  [PipelineAccessLevel.UNSPECIFIED]: "",
  [PipelineAccessLevel.READ_ONLY]: "read_only",
  [PipelineAccessLevel.BUILD_AND_READ]: "build_and_read",
  [PipelineAccessLevel.MANAGE_BUILD_AND_READ]: "manage_build_and_read",
};
const SUITE_LEVEL_NAMES: Record<SuiteAccessLevel, string> = {
  [SuiteAccessLevel.UNSPECIFIED]: "",
  [SuiteAccessLevel.READ]: "read",
  [SuiteAccessLevel.EDIT]: "edit",
};

/** The names a REST body may give for an enum, in words ("a, b or c"), for its schema's description. */
function inWords(names: Record<number, string>): string {
  const all = Object.values(names).filter((name) => name !== "");
  return all.length < 2 ? all.join("") : `${all.slice(0, -1).join(", ")} or ${all.at(-1)}`;
}
/** "member or maintainer". */
export const TEAM_ROLES_IN_WORDS = inWords(ROLE_NAMES);
/** "read_only, build_and_read or manage_build_and_read". */
export const PIPELINE_LEVELS_IN_WORDS = inWords(LEVEL_NAMES);

/** The enum value named by a REST string, or UNSPECIFIED (which identity refuses with its reason). */
function parseName<E extends number>(names: Record<E, string>, value: unknown, unspecified: E): E {
  for (const [k, name] of Object.entries(names) as Array<[string, string]>) {
    if (name !== "" && name === value) return Number(k) as E;
  }
  return unspecified;
}

/** A team member role from the REST body ("member" or "maintainer"). */
export const teamRoleOf = (value: unknown) => parseName(ROLE_NAMES, value, TeamMemberRole.UNSPECIFIED);
/** A pipeline access level from the REST body ("read_only", "build_and_read" or "manage_build_and_read"). */
export const pipelineLevelOf = (value: unknown) => parseName(LEVEL_NAMES, value, PipelineAccessLevel.UNSPECIFIED);
/** Suite access levels from the REST body (an array of "read" and "edit"); anything but an array is none. */
export const suiteLevelsOf = (value: unknown) =>
  Array.isArray(value) ? value.map((v) => parseName(SUITE_LEVEL_NAMES, v, SuiteAccessLevel.UNSPECIFIED)) : [];

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
    role: ROLE_NAMES[m.role],
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
    access_level: LEVEL_NAMES[l.accessLevel],
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
    access_level: l.accessLevels.map((level) => SUITE_LEVEL_NAMES[level]),
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
