import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { AgentsService } from "@conveyor/proto/agents";
import { IdentityService, Role } from "@conveyor/proto/identity";
import { createServiceClient } from "@conveyor/runtime";
import { dataPaths, type Env, envValue } from "../host/paths.js";
import type { StackInfo } from "../stack/stack-info.js";
import {
  accessTokenReusable,
  agentTokenReusable,
  type Credentials,
  DEFAULT_CLUSTER_NAME,
  readCredentials,
  writeCredentials,
} from "./credentials.js";
import { ALL_SCOPES } from "./scopes.js";

export interface BootstrapOptions {
  identityUrl: string;
  agentsUrl: string;
  /** The gateway's base URL and agent URL, saved with the credentials. */
  apiUrl: string;
  agentUrl: string;
  credentialsFile: string;
  env?: Env;
  log?: (line: string) => void;
}

export interface BootstrapResult {
  credentials: Credentials;
  /** Which parts were found rather than created. */
  reused: { organization: boolean; user: boolean; apiToken: boolean; agentToken: boolean };
}

/** The organization and admin user bootstrap creates: BOOTSTRAP_ORG_SLUG, BOOTSTRAP_ORG_NAME, BOOTSTRAP_ADMIN_*. */
export function bootstrapSettings(env: Env) {
  return {
    orgSlug: envValue(env, "BOOTSTRAP_ORG_SLUG") ?? "conveyor",
    orgName: envValue(env, "BOOTSTRAP_ORG_NAME") ?? "Conveyor",
    adminEmail: (envValue(env, "BOOTSTRAP_ADMIN_EMAIL") ?? "admin@conveyor.local").toLowerCase(),
    adminName: envValue(env, "BOOTSTRAP_ADMIN_NAME") ?? "Admin",
  };
}

function isCode(err: unknown, code: Code): boolean {
  return ConnectError.from(err).code === code;
}

/**
 * Makes sure the organization, its admin user, its cluster "Default", an API token with every scope and an agent
 * registration token of that cluster exist, reusing what credentials.json names when the services still accept it.
 * Idempotent.
 */
export async function bootstrap(opts: BootstrapOptions): Promise<BootstrapResult> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? (() => {});
  const settings = bootstrapSettings(env);
  const identity = createServiceClient(IdentityService, opts.identityUrl);
  const agents = createServiceClient(AgentsService, opts.agentsUrl);
  const saved = readCredentials(opts.credentialsFile);
  const reused = { organization: true, user: true, apiToken: true, agentToken: true };

  let org = await identity
    .getOrganization({ slug: settings.orgSlug })
    .then((r) => r.organization)
    .catch((err: unknown) => {
      if (isCode(err, Code.NotFound)) return undefined;
      throw err;
    });
  if (org === undefined) {
    reused.organization = false;
    log(`creating organization "${settings.orgName}" (${settings.orgSlug})`);
    org = await identity
      .createOrganization({ name: settings.orgName, slug: settings.orgSlug })
      .then((r) => r.organization)
      .catch(async (err: unknown) => {
        // Another bootstrap created it meanwhile.
        if (isCode(err, Code.AlreadyExists))
          return (await identity.getOrganization({ slug: settings.orgSlug })).organization;
        throw err;
      });
  }
  if (org === undefined) throw new Error("identity service returned no organization");
  const orgId = org.id;

  let user = await identity
    .createUser({ name: settings.adminName, email: settings.adminEmail })
    .then((r) => {
      reused.user = false;
      log(`creating admin user ${settings.adminEmail}`);
      return r.user;
    })
    .catch(async (err: unknown) => {
      if (!isCode(err, Code.AlreadyExists)) throw err;
      return findExistingUser(identity, settings.adminEmail, orgId, saved?.user?.id);
    });
  if (user === undefined) throw new Error("identity service returned no user");
  await identity.addMember({ organization: org.id, userId: user.id, role: Role.ADMIN });
  user = (await identity.getUser({ id: user.id })).user ?? user;

  const { cluster } = await ensureCluster(agents, org.id, saved?.cluster, log);

  let apiToken = saved?.apiToken;
  if (apiToken?.secret) {
    const principal = await identity
      .authenticateAccessToken({ secret: apiToken.secret })
      .then((r) => r.principal)
      .catch((err: unknown) => {
        if (isCode(err, Code.Unauthenticated) || isCode(err, Code.NotFound)) return undefined;
        throw err;
      });
    const view = principal?.token && {
      userId: principal.token.userId,
      scopes: principal.token.scopes,
      reachableOrganizationIds: principal.organizations.flatMap((o) => (o.organization ? [o.organization.id] : [])),
      revoked: principal.token.revokedAt !== undefined,
    };
    if (!accessTokenReusable(view, { userId: user.id, organizationId: org.id, scopes: ALL_SCOPES })) {
      apiToken = undefined;
    }
  } else {
    apiToken = undefined;
  }
  if (apiToken === undefined) {
    reused.apiToken = false;
    log("creating an API access token with every scope");
    const created = await identity.createAccessToken({
      userId: user.id,
      scopes: [...ALL_SCOPES],
      description: "Created by npm start (bootstrap)",
    });
    apiToken = { id: created.token?.id ?? "", secret: created.secret, scopes: [...ALL_SCOPES] };
  }

  let agentToken = saved?.agentToken;
  if (agentToken?.secret) {
    const token = await agents
      .authenticateAgentToken({ secret: agentToken.secret })
      .then((r) => r.token)
      .catch((err: unknown) => {
        if (isCode(err, Code.Unauthenticated) || isCode(err, Code.NotFound)) return undefined;
        throw err;
      });
    const view = token && {
      organizationId: token.organizationId,
      clusterId: token.clusterId,
      revoked: token.revokedAt !== undefined,
    };
    if (!agentTokenReusable(view, { organizationId: org.id, clusterId: cluster.id })) agentToken = undefined;
  } else {
    agentToken = undefined;
  }
  if (agentToken === undefined) {
    reused.agentToken = false;
    log(`creating an agent registration token of cluster "${cluster.name}"`);
    const created = await agents.createAgentToken({
      organizationId: org.id,
      clusterId: cluster.id,
      description: "Default agent token (created by npm start)",
    });
    agentToken = { id: created.token?.id ?? "", secret: created.secret };
  }

  const credentials: Credentials = {
    apiUrl: opts.apiUrl,
    agentUrl: opts.agentUrl,
    organization: { id: org.id, slug: org.slug, name: org.name },
    user: { id: user.id, email: user.email, name: user.name },
    cluster,
    apiToken,
    agentToken,
    updatedAt: new Date().toISOString(),
  };
  writeCredentials(opts.credentialsFile, credentials);
  return { credentials, reused };
}

/** Bootstraps a running stack, keeping the credentials in its data directory's credentials.json. */
export function bootstrapStack(
  info: StackInfo,
  opts: { env?: Env; log?: (line: string) => void } = {},
): Promise<BootstrapResult> {
  return bootstrap({
    identityUrl: info.serviceUrls.identity,
    agentsUrl: info.serviceUrls.agents,
    apiUrl: info.apiUrl,
    agentUrl: info.agentUrl,
    credentialsFile: dataPaths(info.dataDir).credentialsFile,
    ...opts,
  });
}

type IdentityClient = ReturnType<typeof createServiceClient<typeof IdentityService>>;

/** The agents RPCs ensureCluster uses. */
export type ClusterClient = Pick<Client<typeof AgentsService>, "createCluster" | "getCluster" | "listClusters">;

/**
 * The bootstrap organization's cluster: the one credentials.json names while the agents service still has it (under
 * whatever name it has now); else the cluster named "Default", created unless it exists (credentials.json deleted
 * or the cluster made by hand), in which case it is found by name and adopted.
 */
export async function ensureCluster(
  agents: ClusterClient,
  organizationId: string,
  saved: { id?: string; name?: string } | undefined,
  log: (line: string) => void = () => {},
): Promise<{ cluster: { id: string; name: string }; reused: boolean }> {
  if (saved?.id) {
    const found = await agents
      .getCluster({ organizationId, id: saved.id })
      .then((r) => r.cluster)
      .catch((err: unknown) => {
        if (isCode(err, Code.NotFound)) return undefined;
        throw err;
      });
    if (found) return { cluster: { id: found.id, name: found.name }, reused: true };
    log(`the saved cluster ${saved.name ? `"${saved.name}" ` : ""}(${saved.id}) no longer exists`);
  }
  // Create first, list only when the name is taken: the agents service's unique name index settles a race.
  for (let attempt = 0; attempt < 3; attempt++) {
    const created = await agents
      .createCluster({
        organizationId,
        name: DEFAULT_CLUSTER_NAME,
        description: "Created by npm start (bootstrap) for its agents",
      })
      .then((r) => r.cluster)
      .catch((err: unknown) => {
        if (isCode(err, Code.AlreadyExists)) return undefined;
        throw err;
      });
    if (created) {
      log(`created cluster "${created.name}"`);
      return { cluster: { id: created.id, name: created.name }, reused: false };
    }
    const { clusters } = await agents.listClusters({ organizationId });
    const existing = clusters.find((c) => c.name === DEFAULT_CLUSTER_NAME);
    if (existing) {
      log(`using the existing cluster "${existing.name}" (${existing.id})`);
      return { cluster: { id: existing.id, name: existing.name }, reused: true };
    }
    // Deleted between the create and the list: try again.
  }
  throw new Error(`Could not create or find the cluster "${DEFAULT_CLUSTER_NAME}" of the bootstrap organization`);
}

/** What finding an existing admin user asks of the identity service. */
export type AdminUserClient = Pick<IdentityClient, "getUser" | "listMembers">;

/**
 * The admin user exists already (a duplicate email): take its id from credentials.json when that is the same user,
 * else look for it among the organization's members. A saved id that names no user any more is looked for the same
 * way; any other failure is passed on.
 */
export async function findExistingUser(
  identity: AdminUserClient,
  email: string,
  orgId: string,
  savedId: string | undefined,
) {
  if (savedId) {
    const found = await identity
      .getUser({ id: savedId })
      .then((r) => r.user)
      .catch((err: unknown) => {
        if (isCode(err, Code.NotFound)) return undefined;
        throw err;
      });
    if (found?.email === email) return found;
  }
  for (let page = 1; ; page++) {
    const { members, totalCount } = await identity.listMembers({ organizationId: orgId, page, perPage: 100 });
    const match = members.find((m) => m.user?.email === email);
    if (match?.user) return match.user;
    if (members.length === 0 || page * 100 >= totalCount) break;
  }
  throw new Error(
    `A user with the email ${email} exists but is not a member of the bootstrap organization, and ` +
      "credentials.json does not name it. Set BOOTSTRAP_ADMIN_EMAIL to another address, or add that user to the " +
      "organization with `npx ci-admin member add`.",
  );
}
