import type { SourceProvider } from "@conveyor/proto/source-providers";
import { isoTime } from "@conveyor/runtime";
import { type Static, Type } from "@sinclair/typebox";
import { NullableStr, Str, Timestamp } from "./schemas.js";
import type { Urls } from "./urls.js";

/**
 * A source-provider connection as REST shows it (docs/statuses.md#connections; this project's extension): never its
 * credential, which no answer holds.
 */
export function renderSourceProvider(p: SourceProvider, urls: Urls, orgSlug: string): SourceProviderBody {
  return {
    id: p.id,
    url: urls.api(`organizations/${orgSlug}/source_providers/${p.id}`),
    kind: p.kind,
    api_url: p.apiUrl,
    repository_host: p.repositoryHost,
    credential_type: p.credentialType,
    app_id: p.appId === "" ? null : p.appId,
    description: p.description === "" ? null : p.description,
    created_at: isoTime(p.createdAt) ?? "",
  };
}

export const SourceProviderSchema = Type.Object(
  {
    id: Str,
    url: Str,
    kind: Str,
    api_url: Str,
    repository_host: Str,
    credential_type: Str,
    app_id: NullableStr,
    description: NullableStr,
    created_at: Timestamp,
  },
  { title: "SourceProvider" },
);
export type SourceProviderBody = Static<typeof SourceProviderSchema>;
