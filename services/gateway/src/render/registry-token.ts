import type { Organization, Registry, RegistryToken } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { Nullable, NullableTimestamp, Str } from "./schemas.js";
import { graphqlId, type Urls } from "./urls.js";
import { renderUser, UserSchema } from "./user.js";

/** The API URL of a package registry. */
export function registryApiUrl(urls: Urls, orgSlug: string, registrySlug: string): string {
  return urls.api(`packages/organizations/${orgSlug}/registries/${registrySlug}`);
}

/**
 * The REST registry token, with its organization and registry embedded as go-buildkite decodes them. The secret
 * (`token`) is added only by the create route: it is shown once.
 */
export function renderRegistryToken(
  t: RegistryToken,
  registry: Registry,
  org: Organization,
  urls: Urls,
): RegistryTokenBody {
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
  id: Str,
  graphql_id: Str,
  description: Str,
  url: Str,
  created_at: NullableTimestamp,
  created_by: Nullable(UserSchema),
  organization: Type.Object({ id: Str, slug: Str, url: Str, web_url: Str }),
  registry: Type.Object({ id: Str, graphql_id: Str, slug: Str, url: Str, web_url: Str }),
};

export const RegistryTokenSchema = Type.Object(registryTokenProperties);
export type RegistryTokenBody = Static<typeof RegistryTokenSchema>;

/** The create response: the token with its secret, the only time the secret is shown. */
export const CreatedRegistryTokenSchema = Type.Object({ ...registryTokenProperties, token: Str });
