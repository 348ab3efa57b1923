import type { Rule } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { Nullable, NullableTimestamp, Str } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";
import { renderUser, UserSchema } from "./user.js";

/** The REST Rule object; created_by is null only for rules an operator tool created. */
export function renderRule(r: Rule, urls: Urls, orgSlug: string): RuleBody {
  return {
    uuid: r.id,
    graphql_id: graphqlId("Rule", r.id),
    organization_uuid: r.organizationId,
    url: urls.api(`organizations/${orgSlug}/rules/${r.id}`),
    type: r.type,
    source_type: r.sourceType,
    source_uuid: r.sourceId,
    target_type: r.targetType,
    target_uuid: r.targetId,
    effect: r.effect,
    action: r.action,
    created_at: isoTime(r.createdAt),
    created_by: r.createdBy ? renderUser(r.createdBy) : null,
  };
}

export const RuleSchema = Type.Object({
  uuid: Str,
  graphql_id: Str,
  organization_uuid: Str,
  url: Str,
  type: Str,
  source_type: Str,
  source_uuid: Str,
  target_type: Str,
  target_uuid: Str,
  effect: Str,
  action: Str,
  created_at: NullableTimestamp,
  created_by: Nullable(UserSchema),
});
export type RuleBody = Static<typeof RuleSchema>;
