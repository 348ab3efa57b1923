import type { Rule } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { nullableTimestamp, object, str } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";
import { renderUser, userSchema } from "./user.js";

/** The REST Rule object; created_by is null only for rules an operator tool created. */
export function renderRule(r: Rule, urls: Urls, orgSlug: string) {
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

export const ruleSchema = object({
  uuid: str,
  graphql_id: str,
  organization_uuid: str,
  url: str,
  type: str,
  source_type: str,
  source_uuid: str,
  target_type: str,
  target_uuid: str,
  effect: str,
  action: str,
  created_at: nullableTimestamp,
  created_by: { ...userSchema, type: ["object", "null"] },
});
