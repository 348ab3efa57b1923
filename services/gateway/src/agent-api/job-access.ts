import { Code, ConnectError } from "@connectrpc/connect";
import { CredentialKind } from "@conveyor/proto/agents";
import type { FastifyRequest } from "fastify";
import type { GatewayClients } from "../clients/gateway-clients.js";
import { HttpError } from "../errors/http-error.js";
import { credentialOf } from "./agent-credentials.js";

/** The job (and its build) a caller of a job route acts on, and the agent acting. */
export interface JobInHand {
  jobId: string;
  buildId: string;
  agentId: string;
}

const NO_JOB = () => new HttpError(404, "No job found");
const NO_BUILD = () => new HttpError(404, "No build found");

/** A job by id, or undefined when there is none. */
async function findJob(clients: Pick<GatewayClients, "builds">, jobId: string) {
  try {
    return (await clients.builds.getJob({ jobId })).job;
  } catch (err) {
    if (ConnectError.from(err).code === Code.NotFound) return undefined;
    throw err;
  }
}

/**
 * What an agent credential may act on (docs/compatibility.md#agent-credentials): a job token its own job and build; an agent
 * access token the job its agent holds. Anything else is 404, so a credential cannot probe other jobs.
 */
export function createJobAccess(clients: Pick<GatewayClients, "builds" | "agents">) {
  return {
    async job(request: FastifyRequest, jobId: string): Promise<JobInHand> {
      const credential = credentialOf(request);
      if (credential.kind === CredentialKind.JOB) {
        if (credential.jobId !== jobId) throw NO_JOB();
        return { jobId, buildId: credential.buildId, agentId: credential.agentId };
      }
      const job = await findJob(clients, jobId);
      if (!job || job.agent?.id !== credential.agentId) throw NO_JOB();
      return { jobId, buildId: job.buildId, agentId: credential.agentId };
    },

    async build(request: FastifyRequest, buildId: string): Promise<{ buildId: string }> {
      const credential = credentialOf(request);
      if (credential.kind === CredentialKind.JOB) {
        if (credential.buildId !== buildId) throw NO_BUILD();
        return { buildId };
      }
      const { agent } = await clients.agents.getAgent({
        organizationId: credential.organizationId,
        id: credential.agentId,
      });
      const job = agent?.currentJobId ? await findJob(clients, agent.currentJobId) : undefined;
      if (job?.buildId !== buildId) throw NO_BUILD();
      return { buildId };
    },

    /**
     * The job a call from inside a job acts through (`buildkite-agent step …`, `build cancel`): a job token's own job;
     * for an agent's access token, the job the agent holds. With `buildId` (the agent sends BUILDKITE_BUILD_ID), it
     * must be that job's build: another build is not found. Whether the job still runs is the builds service's check.
     */
    async callingJob(request: FastifyRequest, buildId?: string): Promise<{ jobId: string; buildId: string }> {
      const credential = credentialOf(request);
      if (credential.kind === CredentialKind.JOB) {
        if (buildId && credential.buildId !== buildId) throw NO_BUILD();
        return { jobId: credential.jobId, buildId: credential.buildId };
      }
      const { agent } = await clients.agents.getAgent({
        organizationId: credential.organizationId,
        id: credential.agentId,
      });
      const job = agent?.currentJobId ? await findJob(clients, agent.currentJobId) : undefined;
      if (!job || (buildId && job.buildId !== buildId)) throw NO_BUILD();
      return { jobId: job.id, buildId: job.buildId };
    },
  };
}

export type JobAccess = ReturnType<typeof createJobAccess>;
