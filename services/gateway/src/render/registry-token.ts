import type { Organization, Registry, RegistryToken } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { nullableTimestamp, object, str } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";
import { renderUser, userSchema } from "./user.js";

/** The API URL of a package registry. */
export function registryApiUrl(urls: Urls, orgSlug: string, registrySlug: string): string {
  return urls.api(`packages/organizations/${orgSlug}/registries/${registrySlug}`);
}

/**
 * The REST registry token, with its organization and registry embedded as go-buildkite decodes them. The secret
 * (`token`) is added only by the create route: it is shown once.
 */
export function renderRegistryToken(t: RegistryToken, registry: Registry, org: Organization, urls: Urls) {
  const registryUrl = registryApiUrl(urls, org.slug, registry.slug);
  return {
    id: t.id,
    graphql_id: graphqlId("RegistryToken", t.id),
    description: t.description,
    url: `${registryUrl}/tokens/${t.id}`,
    created_at: isoTime(t.createdAt),
    created_by: t.createdBy ? renderUser(t.createdBy) : null,
    organization: {
      id: org.id,
      slug: org.slug,
      url: urls.api(`organizations/${org.slug}`),
      web_url: urls.web(org.slug),
    },
    registry: {
      id: registry.id,
      graphql_id: graphqlId("Registry", registry.id),
      slug: registry.slug,
      url: registryUrl,
      web_url: urls.web(`organizations/${org.slug}/packages/registries/${registry.slug}`),
    },
  };
}

const registryTokenProperties = {
  id: str,
  graphql_id: str,
  description: str,
  url: str,
  created_at: nullableTimestamp,
  created_by: { ...userSchema, type: ["object", "null"] },
  organization: object({ id: str, slug: str, url: str, web_url: str }),
  registry: object({ id: str, graphql_id: str, slug: str, url: str, web_url: str }),
};

export const registryTokenSchema = object(registryTokenProperties);

/** The create response: the token with its secret, the only time the secret is shown. */
export const createdRegistryTokenSchema = object({ ...registryTokenProperties, token: str });
