import { randomUUID } from "node:crypto";
import {
  isSourceProviderKind,
  normalizeApiUrl,
  repositoryHostOfApiUrl,
  SOURCE_PROVIDER_KINDS,
  type SourceProviderKind,
} from "@conveyor/ci-rules";
import { failedPrecondition, invalidFields, notFound } from "@conveyor/runtime";
import { type KeyRing, openCredential, rewrapCredential, sealCredential } from "./credential-envelope.js";
import {
  credentialBinding,
  type SourceProviderDoc,
  type SourceProviderRepository,
} from "./source-provider-repository.js";

/** The most connections one organization may have (docs/limits.md). */
export const MAX_SOURCE_PROVIDERS_PER_ORGANIZATION = 20;
/** The longest token taken (docs/limits.md). */
export const MAX_TOKEN_LENGTH = 4096;
/** The longest description taken. */
export const MAX_DESCRIPTION_LENGTH = 255;

export interface SourceProvidersDeps {
  repository: SourceProviderRepository;
  /** Null when CREDENTIALS_ENCRYPTION_KEY is unset: connections cannot be added or used. */
  keyRing: KeyRing | null;
  now: () => Date;
  /**
   * Why an API URL may not be reached (a private or loopback address outside OUTBOUND_ALLOW_HOSTS), or null when it
   * may (the outbound client checks every connection again at connect time).
   */
  refusedUrl?: (url: string) => Promise<string | null>;
}

export interface NewSourceProvider {
  organizationId: string;
  kind: string;
  apiUrl: string;
  token: string;
  description: string;
  createdBy: string;
}

/** Connections: adding (validated, the token sealed), listing, reading, removing, and their credentials for sending. */
export function createSourceProviders(deps: SourceProvidersDeps) {
  const { repository } = deps;
  const ring = (): KeyRing => {
    if (!deps.keyRing) {
      throw failedPrecondition(
        "Source-provider credentials cannot be stored: the notifications service has no CREDENTIALS_ENCRYPTION_KEY",
      );
    }
    return deps.keyRing;
  };

  return {
    async create(input: NewSourceProvider): Promise<SourceProviderDoc> {
      const errors: Array<{ field: string; code: string }> = [];
      const kind = input.kind.trim();
      let apiUrl = "";
      if (!isSourceProviderKind(kind)) {
        errors.push({ field: "kind", code: `must be one of ${SOURCE_PROVIDER_KINDS.join(", ")}` });
      } else {
        try {
          apiUrl = normalizeApiUrl(kind as SourceProviderKind, input.apiUrl);
        } catch (err) {
          errors.push({ field: "api_url", code: err instanceof Error ? err.message : "is invalid" });
        }
      }
      const token = input.token.trim();
      if (token === "") errors.push({ field: "token", code: "can't be blank" });
      else if (token.length > MAX_TOKEN_LENGTH) {
        errors.push({ field: "token", code: `is longer than ${MAX_TOKEN_LENGTH} characters` });
      } else if (/\s/.test(token) || hasControlCharacter(token)) {
        errors.push({ field: "token", code: "may not contain spaces or control characters" });
      }
      const description = input.description.trim();
      if (description.length > MAX_DESCRIPTION_LENGTH) {
        errors.push({ field: "description", code: `is longer than ${MAX_DESCRIPTION_LENGTH} characters` });
      } else if (hasControlCharacter(description)) {
        errors.push({ field: "description", code: "may not contain control characters" });
      }
      if (errors.length === 0 && deps.refusedUrl) {
        const refused = await deps.refusedUrl(apiUrl);
        if (refused !== null) errors.push({ field: "api_url", code: refused });
      }
      if (errors.length > 0) throw invalidFields(errors);
      const keys = ring();
      if ((await repository.count(input.organizationId)) >= MAX_SOURCE_PROVIDERS_PER_ORGANIZATION) {
        throw failedPrecondition(
          `An organization can have at most ${MAX_SOURCE_PROVIDERS_PER_ORGANIZATION} source providers.`,
        );
      }
      const id = randomUUID();
      const doc: SourceProviderDoc = {
        _id: id,
        organizationId: input.organizationId,
        kind,
        apiUrl,
        repositoryHost: repositoryHostOfApiUrl(apiUrl)?.host ?? "",
        credentialType: "token",
        credential: sealCredential(keys, credentialBinding({ _id: id, organizationId: input.organizationId }), token),
        description,
        createdAt: deps.now(),
        createdBy: input.createdBy,
      };
      await repository.insert(doc);
      return doc;
    },

    list: (organizationId: string) => repository.list(organizationId),

    async get(organizationId: string, id: string): Promise<SourceProviderDoc> {
      const doc = await repository.get(organizationId, id);
      if (!doc) throw notFound("source provider");
      return doc;
    },

    async remove(organizationId: string, id: string): Promise<void> {
      if (!(await repository.remove(organizationId, id))) throw notFound("source provider");
    },

    /** The connection's token, opened; throws when the key it was sealed with is not held. */
    token(doc: SourceProviderDoc): string {
      return openCredential(ring(), credentialBinding(doc), doc.credential);
    },
  };
}

export type SourceProviders = ReturnType<typeof createSourceProviders>;

/**
 * Rewraps every credential sealed under another key than the current one (docs/operations.md#rotating-the-credentials-key),
 * `batch` at a time; returns how many were moved and the ids that could not be (their key is not held). Safe on
 * several replicas at once: each replacement is a compare-and-set on the key id it read.
 */
export async function rewrapCredentials(
  repository: SourceProviderRepository,
  ring: KeyRing,
  batch = 100,
): Promise<{ rewrapped: number; unopened: string[] }> {
  const unopened = new Set<string>();
  const seen = new Set<string>();
  let rewrapped = 0;
  for (;;) {
    const docs = (await repository.sealedWithOtherKey(ring.current.id, batch + seen.size)).filter(
      (d) => !seen.has(d._id),
    );
    if (docs.length === 0) break;
    for (const doc of docs) {
      seen.add(doc._id);
      try {
        const next = rewrapCredential(ring, credentialBinding(doc), doc.credential);
        if (await repository.replaceCredential(doc._id, doc.credential.keyId, next)) rewrapped++;
      } catch {
        unopened.add(doc._id);
      }
    }
  }
  return { rewrapped, unopened: [...unopened] };
}

function hasControlCharacter(text: string): boolean {
  for (const c of text) {
    const code = c.codePointAt(0) ?? 0;
    if (code < 0x20 || code === 0x7f) return true;
  }
  return false;
}
