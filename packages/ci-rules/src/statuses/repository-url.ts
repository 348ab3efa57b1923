/**
 * A pipeline's repository URL read as the forge's repository (docs/statuses.md#which-connection), and the choice of
 * the organization's source-provider connection that serves it. Pure: no I/O.
 */

/** The forge's repository a URL names. */
export interface RepositoryLocation {
  /** The host name, lowercased, without the port. */
  host: string;
  /** The port the URL names, when it is an http(s) URL with an explicit port; null otherwise. */
  port: number | null;
  /** The repository's path on the forge without `.git`: `owner/name`, or `group/subgroup/name` (GitLab). */
  path: string;
  /** Everything before the last segment (a GitHub owner, a GitLab namespace, a Bitbucket workspace). */
  owner: string;
  /** The last segment. */
  name: string;
}

/** The longest repository URL read (a pipeline's repository is bounded lower; this keeps the rule total). */
export const MAX_REPOSITORY_URL_LENGTH = 2048;

const SEGMENT = /^[A-Za-z0-9_.~-][A-Za-z0-9_.~-]*$/;
const SCP_LIKE = /^(?:[^@/\s]+@)?([A-Za-z0-9.-]+):(?!\/\/)([^\s]+)$/;

/**
 * Reads an https, http, ssh, git or scp-like (`git@host:owner/name.git`) repository URL; null for anything else
 * (a local path, `file://`, a URL without an owner and a name, segments that are `.` or `..`).
 */
export function parseRepositoryUrl(url: string): RepositoryLocation | null {
  const text = url.trim();
  if (text === "" || text.length > MAX_REPOSITORY_URL_LENGTH) return null;
  let host: string;
  let port: number | null = null;
  let rawPath: string;
  const scp = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? null : SCP_LIKE.exec(text);
  if (scp) {
    host = scp[1] ?? "";
    rawPath = scp[2] ?? "";
  } else {
    let parsed: URL;
    try {
      parsed = new URL(text);
    } catch {
      return null;
    }
    const scheme = parsed.protocol.replace(/:$/, "").toLowerCase();
    if (!["https", "http", "ssh", "git", "git+ssh", "ssh+git"].includes(scheme)) return null;
    host = parsed.hostname;
    if (parsed.port !== "" && (scheme === "https" || scheme === "http")) port = Number(parsed.port);
    if (parsed.search !== "" || parsed.hash !== "") return null;
    rawPath = decodeSafely(parsed.pathname);
  }
  host = host.toLowerCase().replace(/^\[|\]$/g, "");
  if (host === "" || host.endsWith(".")) return null;
  const segments = rawPath
    .replace(/^\/+/, "")
    .replace(/\/+$/, "")
    .replace(/\.git$/i, "")
    .split("/");
  if (segments.length < 2) return null;
  // scp-like URLs with a leading `~user/` or absolute paths outside a forge are not repositories a forge names.
  if (segments.some((s) => !SEGMENT.test(s) || s === "." || s === "..")) return null;
  const name = segments[segments.length - 1] ?? "";
  const owner = segments.slice(0, -1).join("/");
  if (name === "" || owner === "") return null;
  return { host, port, path: `${owner}/${name}`, owner, name };
}

function decodeSafely(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return "\u0000";
  }
}

/** A connection as the choice reads it. */
export interface ConnectionHost {
  id: string;
  /** The connection's API base URL (`https://api.github.com`, `https://gitea.example.com`, …). */
  apiUrl: string;
  /** When it was made (ISO 8601 or epoch milliseconds as a string that sorts), for a stable choice among equals. */
  createdAt: string;
}

/**
 * The host a connection's API URL serves repositories of: its host name, without a leading `api.` (GitHub's
 * `api.github.com` serves `github.com`, Bitbucket's `api.bitbucket.org` serves `bitbucket.org`), lowercased.
 */
export function repositoryHostOfApiUrl(apiUrl: string): { host: string; port: number | null } | null {
  let parsed: URL;
  try {
    parsed = new URL(apiUrl);
  } catch {
    return null;
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return null;
  const host = parsed.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  return {
    host: host.startsWith("api.") ? host.slice("api.".length) : host,
    port: parsed.port === "" ? null : Number(parsed.port),
  };
}

/**
 * The connection that serves a repository: among the connections whose API host (see repositoryHostOfApiUrl)
 * equals the repository's host, the one on the repository URL's port when the URL names one and a connection
 * matches it, then the oldest; null when none matches.
 */
export function connectionForRepository<T extends ConnectionHost>(
  repository: RepositoryLocation,
  connections: readonly T[],
): T | null {
  const sameHost = connections
    .map((connection) => ({ connection, at: repositoryHostOfApiUrl(connection.apiUrl) }))
    .filter((c) => c.at !== null && c.at.host === repository.host);
  if (sameHost.length === 0) return null;
  const samePort = repository.port === null ? [] : sameHost.filter((c) => c.at?.port === repository.port);
  const pool = samePort.length > 0 ? samePort : sameHost;
  const sorted = [...pool].sort((a, b) =>
    a.connection.createdAt === b.connection.createdAt
      ? a.connection.id.localeCompare(b.connection.id)
      : a.connection.createdAt.localeCompare(b.connection.createdAt),
  );
  return sorted[0]?.connection ?? null;
}
