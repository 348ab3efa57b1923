import { AgentsService } from "@conveyor/proto/agents";
import { BuildsService } from "@conveyor/proto/builds";
import { IdentityService, Role } from "@conveyor/proto/identity";
import { createServiceClient } from "@conveyor/runtime";

/** The running stack the Jest global setup started (or the one CONVEYOR_* points at). */
export const stack = {
  apiUrl: need("CONVEYOR_API_URL"),
  apiToken: need("CONVEYOR_API_TOKEN"),
  orgSlug: need("CONVEYOR_ORG_SLUG"),
  identityUrl: need("IDENTITY_URL"),
  agentsUrl: need("AGENTS_URL"),
  // Read when used, so that suites needing no agent run against a stack that does not export them.
  /** The agent API's base URL (…/v3). */
  get agentUrl(): string {
    return need("CONVEYOR_AGENT_URL");
  },
  /**
   * The agent API on the gateway's TLS port (https://localhost:…/v3) and the file its agents trust it by
   * (SSL_CERT_FILE); undefined when the stack has no TLS.
   */
  get agentTls(): { url: string; trustFile: string } | undefined {
    const url = process.env.CONVEYOR_AGENT_TLS_URL;
    const trustFile = process.env.CONVEYOR_AGENT_TRUST_FILE;
    return url && trustFile ? { url, trustFile } : undefined;
  },
  /** The bootstrap organization's agent registration token (of the cluster below). */
  get agentToken(): string {
    return need("CONVEYOR_AGENT_TOKEN");
  },
  /** The buildkite-agent binary; the test stack runs no agent of its own. */
  get agentBin(): string {
    return need("CONVEYOR_AGENT_BIN");
  },
  /** The bootstrap organization's cluster ("Default"): its pipelines' cluster_id, its agent token's cluster. */
  get clusterId(): string {
    return need("CONVEYOR_CLUSTER_ID");
  },
};

function need(name: string): string {
  const value = process.env[name];
  if (!value)
    throw new Error(`${name} is not set: run the end-to-end suites through \`npm test\`, which starts a stack`);
  return value;
}

/** An identity client, for arranging users, organizations and tokens the REST API cannot create. */
export const identity = createServiceClient(IdentityService, stack.identityUrl);

/** An agents client, for arranging clusters. */
export const agents = createServiceClient(AgentsService, stack.agentsUrl);

/** Creates a cluster in an organization and returns its id. */
export async function arrangeCluster(organizationId: string): Promise<string> {
  const { cluster } = await agents.createCluster({ organizationId, name: unique("cluster") });
  return cluster?.id ?? "";
}

/** A JSON REST call with a body. */
export function send(method: string, path: string, token: string, body?: unknown) {
  return api(path, token, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** A REST call with the given token (or none). */
export async function api(path: string, token?: string, init: RequestInit = {}) {
  const res = await fetch(`${stack.apiUrl}${path}`, {
    ...init,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(init.headers ?? {}) },
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

let seq = 0;
/**
 * A unique suffix for names and emails, so suites can share one stack. Jest runs suites in several worker
 * processes at once, so the time and a per-process counter alone can repeat: the process id tells them apart.
 */
export function unique(prefix: string): string {
  seq += 1;
  return `${prefix}-${Date.now().toString(36)}-${process.pid.toString(36)}-${seq}`;
}

/** Creates an organization, a user with the given role in it, and a token with the given scopes. */
export async function arrangeOrgUser(opts: { scopes: string[]; role?: Role; orgs?: string[]; teamsEnabled?: boolean }) {
  const { organization } = await identity.createOrganization({
    name: unique("Org"),
    teamsEnabled: opts.teamsEnabled ?? false,
  });
  const { user } = await identity.createUser({ name: unique("User"), email: `${unique("u")}@example.com` });
  await identity.addMember({
    organization: organization?.id ?? "",
    userId: user?.id ?? "",
    role: opts.role ?? Role.MEMBER,
  });
  const { secret, token } = await identity.createAccessToken({
    userId: user?.id ?? "",
    scopes: opts.scopes,
    organizations: opts.orgs ?? [],
  });
  if (!organization || !user || !token) throw new Error("arrangement failed");
  return { organization, user, token, secret };
}

/** Adds another user with the given role and scopes to an existing organization. */
export async function arrangeMember(organizationId: string, role: Role, scopes: string[]) {
  const { user } = await identity.createUser({ name: unique("User"), email: `${unique("u")}@example.com` });
  await identity.addMember({ organization: organizationId, userId: user?.id ?? "", role });
  const { secret } = await identity.createAccessToken({ userId: user?.id ?? "", scopes });
  return { user, secret };
}

/** A builds client, for driving jobs through their states (TransitionJob) as the agents service would. */
export const builds = createServiceClient(BuildsService, need("BUILDS_URL"));
