/**
 * Source-provider kinds, their API base URLs, and each forge's own commit-status request (docs/statuses.md#what-is-published):
 * GitHub and GitHub Enterprise `POST /repos/{owner}/{repo}/statuses/{sha}`, GitLab `POST /projects/{id}/statuses/{sha}`,
 * Bitbucket Cloud `POST /repositories/{workspace}/{repo}/commit/{sha}/statuses/build`, Gitea and Forgejo
 * `POST /repos/{owner}/{repo}/statuses/{sha}`. Pure: the caller sends the request.
 */

import type { CommitStatus } from "./commit-statuses.js";
import type { RepositoryLocation } from "./repository-url.js";

export const SOURCE_PROVIDER_KINDS = ["github", "github_enterprise", "gitlab", "bitbucket", "gitea"] as const;
export type SourceProviderKind = (typeof SOURCE_PROVIDER_KINDS)[number];

/** The longest API base URL a connection takes. */
export const MAX_API_URL_LENGTH = 512;

/** The API base URL of the public service of a kind, used when a connection names none. */
const DEFAULT_API_URLS: Partial<Record<SourceProviderKind, string>> = {
  github: "https://api.github.com",
  gitlab: "https://gitlab.com/api/v4",
  bitbucket: "https://api.bitbucket.org/2.0",
};

/** The path every API URL of a kind ends with (added when a connection's URL lacks it). */
const API_PATHS: Record<SourceProviderKind, string> = {
  github: "",
  github_enterprise: "/api/v3",
  gitlab: "/api/v4",
  bitbucket: "/2.0",
  gitea: "/api/v1",
};

export function isSourceProviderKind(kind: string): kind is SourceProviderKind {
  return (SOURCE_PROVIDER_KINDS as readonly string[]).includes(kind);
}

/**
 * A connection's API base URL as stored: the kind's public service when none is given (GitHub, GitLab, Bitbucket),
 * the kind's API path added when missing (`https://gitea.example.com` → `https://gitea.example.com/api/v1`), without
 * a trailing slash. Throws an Error whose message names what is wrong.
 */
export function normalizeApiUrl(kind: SourceProviderKind, apiUrl: string): string {
  const given = apiUrl.trim();
  const text = given === "" ? (DEFAULT_API_URLS[kind] ?? "") : given;
  if (text === "") throw new Error(`a ${kind} connection needs its API URL`);
  if (text.length > MAX_API_URL_LENGTH) throw new Error(`the API URL is longer than ${MAX_API_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error("the API URL is not a URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new Error("the API URL must be http or https");
  if (url.username !== "" || url.password !== "") throw new Error("the API URL may not hold credentials");
  if (url.search !== "" || url.hash !== "") throw new Error("the API URL may not have a query or a fragment");
  let path = url.pathname.replace(/\/+$/, "");
  const apiPath = API_PATHS[kind];
  if (apiPath !== "" && !path.endsWith(apiPath)) path = `${path}${apiPath}`;
  return `${url.protocol}//${url.host}${path}`;
}

/** A status request ready to send (the credential's header is added by the caller with authorizationHeader). */
export interface ForgeStatusRequest {
  method: "POST";
  url: string;
  headers: Record<string, string>;
  body: Record<string, string>;
}

/** The state words each forge uses. */
export function forgeState(kind: SourceProviderKind, status: Pick<CommitStatus, "state" | "canceled">): string {
  switch (kind) {
    case "gitlab":
      return {
        pending: "running",
        success: "success",
        failure: "failed",
        error: status.canceled ? "canceled" : "failed",
      }[status.state];
    case "bitbucket":
      return {
        pending: "INPROGRESS",
        success: "SUCCESSFUL",
        failure: "FAILED",
        error: status.canceled ? "STOPPED" : "FAILED",
      }[status.state];
    default:
      return status.state;
  }
}

/** The request that sets `status` on commit `sha` of `repository` through a connection of `kind` at `apiUrl`. */
export function forgeStatusRequest(
  kind: SourceProviderKind,
  apiUrl: string,
  repository: RepositoryLocation,
  sha: string,
  status: CommitStatus,
): ForgeStatusRequest {
  const base = apiUrl.replace(/\/+$/, "");
  const owner = repository.owner.split("/").map(encodeURIComponent).join("/");
  const name = encodeURIComponent(repository.name);
  const commit = encodeURIComponent(sha.toLowerCase());
  const json = { "Content-Type": "application/json", Accept: "application/json" };
  const state = forgeState(kind, status);
  switch (kind) {
    case "github":
    case "github_enterprise":
      return {
        method: "POST",
        url: `${base}/repos/${owner}/${name}/statuses/${commit}`,
        headers: { ...json, Accept: "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28" },
        body: { state, target_url: status.targetUrl, description: status.description, context: status.context },
      };
    case "gitea":
      return {
        method: "POST",
        url: `${base}/repos/${owner}/${name}/statuses/${commit}`,
        headers: json,
        body: { state, target_url: status.targetUrl, description: status.description, context: status.context },
      };
    case "gitlab":
      return {
        method: "POST",
        url: `${base}/projects/${encodeURIComponent(repository.path)}/statuses/${commit}`,
        headers: json,
        body: { state, name: status.context, target_url: status.targetUrl, description: status.description },
      };
    case "bitbucket":
      return {
        method: "POST",
        url: `${base}/repositories/${owner}/${name}/commit/${commit}/statuses/build`,
        headers: json,
        body: {
          key: status.context,
          state,
          url: status.targetUrl,
          description: status.description,
          name: status.context,
        },
      };
  }
}

/**
 * The header that carries a connection's token: `Authorization: Bearer …` for GitHub, GitLab (personal, project and
 * group access tokens) and Bitbucket access tokens; `Authorization: token …` for Gitea; Basic for a Bitbucket
 * `username:app-password`.
 */
export function authorizationHeader(kind: SourceProviderKind, token: string): Record<string, string> {
  if (kind === "gitea") return { Authorization: `token ${token}` };
  if (kind === "bitbucket" && token.includes(":")) {
    return { Authorization: `Basic ${Buffer.from(token, "utf8").toString("base64")}` };
  }
  return { Authorization: `Bearer ${token}` };
}
