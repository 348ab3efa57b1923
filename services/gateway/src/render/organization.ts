import type { Organization } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { nullableTimestamp, object, str } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";

/** The REST Organization object. */
export function renderOrganization(o: Organization, urls: Urls) {
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

export const organizationSchema = object({
  id: str,
  graphql_id: str,
  url: str,
  web_url: str,
  name: str,
  slug: str,
  pipelines_url: str,
  agents_url: str,
  emojis_url: str,
  created_at: nullableTimestamp,
});
