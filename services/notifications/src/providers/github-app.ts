import { createPrivateKey, sign } from "node:crypto";

/**
 * A GitHub App as a connection's credential (docs/statuses.md#connections): its id and private key make a JSON Web
 * Token (RS256, ten minutes at most, as GitHub requires), which finds the App's installation on a repository
 * (`GET /repos/{owner}/{repo}/installation`) and exchanges it for an installation token
 * (`POST /app/installations/{id}/access_tokens`), kept until shortly before it expires.
 */

/** What a github_app credential holds (sealed as JSON). */
export interface GithubAppCredential {
  appId: string;
  privateKey: string;
}

/** The longest private key taken (an RSA 4096 key in PEM is about 3.3 KB). */
export const MAX_PRIVATE_KEY_LENGTH = 8192;

/** Why an App id and private key cannot be used, or null. */
export function githubAppProblem(appId: string, privateKey: string): { field: string; code: string } | null {
  if (!/^[0-9]{1,20}$/.test(appId)) return { field: "app_id", code: "must be the App's numeric id" };
  if (privateKey.length > MAX_PRIVATE_KEY_LENGTH) {
    return { field: "private_key", code: `is longer than ${MAX_PRIVATE_KEY_LENGTH} characters` };
  }
  try {
    const key = createPrivateKey(privateKey);
    if (key.asymmetricKeyType !== "rsa") return { field: "private_key", code: "must be an RSA private key (PEM)" };
  } catch {
    return { field: "private_key", code: "is not a private key in PEM" };
  }
  return null;
}

const base64url = (data: Buffer | string) => Buffer.from(data).toString("base64url");

/** The App's JSON Web Token: issued a minute back (clock drift, as GitHub advises), valid nine minutes after now. */
export function githubAppJwt(credential: GithubAppCredential, now: Date): string {
  const seconds = Math.floor(now.getTime() / 1000);
  const header = base64url(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const payload = base64url(JSON.stringify({ iat: seconds - 60, exp: seconds + 540, iss: credential.appId }));
  const signature = sign("sha256", Buffer.from(`${header}.${payload}`), createPrivateKey(credential.privateKey));
  return `${header}.${payload}.${base64url(signature)}`;
}

/** One HTTP call through the outbound client. */
export type OutboundCall = (request: {
  method: "GET" | "POST";
  url: string;
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}) => Promise<{ status: number; body: string }>;

/** A failure to get an installation token; `retryable` as a delivery's outcome would say. */
export class GithubAppError extends Error {
  override name = "GithubAppError";
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly responseCode = 0,
  ) {
    super(message);
  }
}

/** Installation tokens kept at most (one per connection and repository). */
const MAX_KEPT = 1000;
/** A token is used until this long before it expires (GitHub's last an hour). */
const RENEW_BEFORE_MS = 5 * 60_000;

const retryable = (status: number) => status === 408 || status === 429 || status >= 500;

/** Installation tokens for a connection's repositories, made when needed and kept while they are good. */
export function createGithubAppTokens(deps: { call: OutboundCall; now: () => Date }) {
  const kept = new Map<string, { token: string; until: number }>();
  const headers = (jwt: string) => ({
    Authorization: `Bearer ${jwt}`,
    Accept: "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
    "User-Agent": "Conveyor",
  });
  const json = (text: string): Record<string, unknown> => {
    try {
      const v = JSON.parse(text) as unknown;
      return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  };
  return {
    async token(
      connection: { id: string; apiUrl: string },
      credential: GithubAppCredential,
      repository: { owner: string; name: string },
      signal: AbortSignal,
    ): Promise<string> {
      const key = `${connection.id}\0${repository.owner.toLowerCase()}/${repository.name.toLowerCase()}`;
      const now = deps.now().getTime();
      const hit = kept.get(key);
      if (hit && hit.until > now) return hit.token;
      const jwt = githubAppJwt(credential, deps.now());
      const base = connection.apiUrl.replace(/\/+$/, "");
      const repo = `${encodeURIComponent(repository.owner)}/${encodeURIComponent(repository.name)}`;
      const found = await deps.call({
        method: "GET",
        url: `${base}/repos/${repo}/installation`,
        headers: headers(jwt),
        signal,
      });
      if (found.status !== 200) {
        throw new GithubAppError(
          found.status === 404
            ? `the GitHub App ${credential.appId} is not installed on ${repository.owner}/${repository.name}`
            : `GitHub answered ${found.status} when asked for the App's installation`,
          retryable(found.status),
          found.status,
        );
      }
      const installation = json(found.body).id;
      if (typeof installation !== "number") throw new GithubAppError("GitHub's installation has no id", false, 200);
      const made = await deps.call({
        method: "POST",
        url: `${base}/app/installations/${installation}/access_tokens`,
        headers: headers(jwt),
        body: "{}",
        signal,
      });
      const answer = json(made.body);
      if (made.status !== 201 || typeof answer.token !== "string") {
        throw new GithubAppError(
          `GitHub answered ${made.status} when asked for an installation token`,
          retryable(made.status),
          made.status,
        );
      }
      const expires = typeof answer.expires_at === "string" ? Date.parse(answer.expires_at) : Number.NaN;
      const until = (Number.isFinite(expires) ? expires : now + 3_600_000) - RENEW_BEFORE_MS;
      kept.delete(key);
      kept.set(key, { token: answer.token, until });
      if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value as string);
      return answer.token;
    },
    /** Forgets a connection's tokens (a 401 with one: the App's permissions may have changed). */
    forget(connectionId: string) {
      for (const key of kept.keys()) if (key.startsWith(`${connectionId}\0`)) kept.delete(key);
    },
  };
}

export type GithubAppTokens = ReturnType<typeof createGithubAppTokens>;
