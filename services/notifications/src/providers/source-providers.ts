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
import { type GithubAppCredential, githubAppProblem } from "./github-app.js";
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
  /** A GitHub App's id and private key instead of a token (github and github_enterprise). */
  appId?: string;
  privateKey?: string;
}

/** A connection's credential, opened to send. */
export type OpenedCredential = { type: "token"; token: string } | { type: "github_app"; app: GithubAppCredential };

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
      const credential = credentialOf(kind, input, errors);
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
        credentialType: credential.type,
        ...(credential.type === "github_app" ? { appId: credential.app.appId } : {}),
        credential: sealCredential(
          keys,
          credentialBinding({ _id: id, organizationId: input.organizationId }),
          credential.type === "token" ? credential.token : JSON.stringify(credential.app),
        ),
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

    /** The connection's credential, opened; throws when the key it was sealed with is not held. */
    credential(doc: SourceProviderDoc): OpenedCredential {
      const opened = openCredential(ring(), credentialBinding(doc), doc.credential);
      if (doc.credentialType !== "github_app") return { type: "token", token: opened };
      const app = JSON.parse(opened) as GithubAppCredential;
      return { type: "github_app", app: { appId: String(app.appId), privateKey: String(app.privateKey) } };
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

/** The credential a new connection gives (a token, or a GitHub App), its problems added to `errors`. */
function credentialOf(
  kind: string,
  input: NewSourceProvider,
  errors: Array<{ field: string; code: string }>,
): OpenedCredential {
  const token = input.token.trim();
  const appId = (input.appId ?? "").trim();
  const privateKey = (input.privateKey ?? "").trim();
  if (appId !== "" || privateKey !== "") {
    if (kind !== "github" && kind !== "github_enterprise") {
      errors.push({ field: "app_id", code: "is for github and github_enterprise connections only" });
    } else if (token !== "") {
      errors.push({ field: "token", code: "must be empty when a GitHub App is given" });
    } else {
      const problem = githubAppProblem(appId, privateKey);
      if (problem) errors.push(problem);
    }
    return { type: "github_app", app: { appId, privateKey } };
  }
  if (token === "") errors.push({ field: "token", code: "can't be blank" });
  else if (token.length > MAX_TOKEN_LENGTH) {
    errors.push({ field: "token", code: `is longer than ${MAX_TOKEN_LENGTH} characters` });
  } else if (/\s/.test(token) || hasControlCharacter(token)) {
    errors.push({ field: "token", code: "may not contain spaces or control characters" });
  }
  return { type: "token", token };
}
