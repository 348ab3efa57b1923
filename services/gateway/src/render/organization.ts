import type { Organization } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { NullableTimestamp, Str } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";

/** The REST Organization object. */
export function renderOrganization(o: Organization, urls: Urls): OrganizationBody {
  const url = urls.api(`organizations/${o.slug}`);
  return {
    id: o.id,
    graphql_id: graphqlId("Organization", o.id),
    url,
    web_url: urls.web(o.slug),
    name: o.name,
    slug: o.slug,
    pipelines_url: `${url}/pipelines`,
    agents_url: `${url}/agents`,
    emojis_url: `${url}/emojis`,
    created_at: isoTime(o.createdAt),
  };
}

export const OrganizationSchema = Type.Object({
  id: Str,
  graphql_id: Str,
  url: Str,
  web_url: Str,
  name: Str,
  slug: Str,
  pipelines_url: Str,
  agents_url: Str,
  emojis_url: Str,
  created_at: NullableTimestamp,
});
export type OrganizationBody = Static<typeof OrganizationSchema>;
