/**
 * The three secrets of the agent API (docs/compatibility.md#agent-credentials): registration tokens (register, metrics), agent
 * access tokens (issued at registration) and job tokens (issued at accept, valid until the job finishes). Each kind
 * has its own prefix, so a secret is looked up in one place; only SHA-256 hashes are stored.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { CredentialKind } from "@conveyor/proto/agents";
import { hashSecret } from "@conveyor/runtime";
import { type AgentRepository, LIVE_STATES } from "../store/agent-repository.js";
import type { ClusterRepository } from "../store/cluster-repository.js";

/** Prefix of agent registration token secrets. */
export const REGISTRATION_TOKEN_PREFIX = "bkat_";
/** Prefix of agent access tokens. */
export const ACCESS_TOKEN_PREFIX = "bkaa_";
/** Prefix of job tokens. */
export const JOB_TOKEN_PREFIX = "bkaj_";

/** Longer secrets are not ours: refused before any lookup. */
const MAX_SECRET_LENGTH = 200;

/** The answer to an unknown, revoked or expired secret. */
export function unauthenticated(): ConnectError {
  return new ConnectError("invalid, revoked or expired agent credential", Code.Unauthenticated);
}

/** Who a secret is, for the gateway. */
export interface Credential {
  kind: CredentialKind;
  organizationId: string;
  clusterId: string;
  tokenId: string;
  agentId: string;
  jobId: string;
  buildId: string;
}

/**
 * Resolves a secret of any kind. A registration token must not be revoked; an access token's agent must be alive
 * (a lost agent may come back; a disconnected or stopped one must register again); a job token must not be revoked.
 */
export async function authenticate(
  secret: string,
  stores: { clusters: ClusterRepository; agents: AgentRepository },
): Promise<Credential> {
  if (secret.length > MAX_SECRET_LENGTH) throw unauthenticated();
  const hash = hashSecret(secret);
  if (secret.startsWith(REGISTRATION_TOKEN_PREFIX)) {
    const token = await stores.clusters.findAgentTokenByHash(hash);
    if (!token || token.revokedAt) throw unauthenticated();
    return {
      kind: CredentialKind.REGISTRATION,
      organizationId: token.organizationId,
      clusterId: token.clusterId ?? "",
      tokenId: token._id,
      agentId: "",
      jobId: "",
      buildId: "",
    };
  }
  if (secret.startsWith(ACCESS_TOKEN_PREFIX)) {
    const agent = await stores.agents.findAgentByTokenHash(hash);
    if (!agent || !(LIVE_STATES.includes(agent.connectionState) || agent.connectionState === "lost"))
      throw unauthenticated();
    return {
      kind: CredentialKind.AGENT,
      organizationId: agent.organizationId,
      clusterId: agent.clusterId ?? "",
      tokenId: agent.tokenId,
      agentId: agent._id,
      jobId: "",
      buildId: "",
    };
  }
  if (secret.startsWith(JOB_TOKEN_PREFIX)) {
    const token = await stores.agents.findJobTokenByHash(hash);
    if (!token || token.revokedAt) throw unauthenticated();
    return {
      kind: CredentialKind.JOB,
      organizationId: token.organizationId,
      clusterId: token.clusterId ?? "",
      tokenId: "",
      agentId: token.agentId,
      jobId: token.jobId,
      buildId: token.buildId,
    };
  }
  throw unauthenticated();
}
