import { chmodSync, readFileSync, renameSync, writeFileSync } from "node:fs";

/** What `npm start` saves in <data>/credentials.json (mode 0600) and reuses on the next start. */
export interface Credentials {
  apiUrl: string;
  agentUrl: string;
  organization: { id: string; slug: string; name: string };
  user: { id: string; email: string; name: string };
  /** The cluster bootstrap keeps for the organization ("Default"); pipelines need one, agents join it. */
  cluster: { id: string; name: string };
  apiToken: { id: string; secret: string; scopes: string[] };
  agentToken: { id: string; secret: string };
  updatedAt: string;
}

/**
 * Reads saved credentials; undefined when the file is missing or not what this launcher wrote (not JSON). Any other
 * failure to read it (permissions) is thrown rather than taken for "none saved", which would make new ones.
 */
export function readCredentials(file: string): Partial<Credentials> | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: not what this launcher wrote.
    return undefined;
  }
  return typeof parsed === "object" && parsed !== null ? (parsed as Partial<Credentials>) : undefined;
}

/** Writes credentials readable by the owner only, atomically. */
export function writeCredentials(file: string, creds: Credentials): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** The parts of an authenticated access token that decide whether a saved token can be reused. */
export interface AccessTokenView {
  userId: string;
  scopes: readonly string[];
  /** The organizations the token may reach (the user's memberships narrowed by its allow-list). */
  reachableOrganizationIds: readonly string[];
  revoked: boolean;
}

/** A saved API token is reused when it still belongs to the admin, has every scope and reaches the organization. */
export function accessTokenReusable(
  token: AccessTokenView | undefined,
  want: { userId: string; organizationId: string; scopes: readonly string[] },
): boolean {
  if (token === undefined || token.revoked || token.userId !== want.userId) return false;
  if (!want.scopes.every((s) => token.scopes.includes(s))) return false;
  return token.reachableOrganizationIds.includes(want.organizationId);
}

/**
 * A saved agent registration token is reused when it is still active and belongs to the organization's bootstrap
 * cluster; an unclustered one (saved before bootstrap kept a cluster) or one of another cluster is replaced.
 */
export function agentTokenReusable(
  token: { organizationId: string; clusterId: string; revoked: boolean } | undefined,
  want: { organizationId: string; clusterId: string },
): boolean {
  return (
    token !== undefined &&
    !token.revoked &&
    token.organizationId === want.organizationId &&
    want.clusterId !== "" &&
    token.clusterId === want.clusterId
  );
}

/** The name of the cluster bootstrap creates. */
export const DEFAULT_CLUSTER_NAME = "Default";
