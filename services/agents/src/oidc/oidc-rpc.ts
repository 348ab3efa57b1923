import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client, ServiceImpl } from "@connectrpc/connect";
import { isRunningJobState } from "@conveyor/ci-rules";
import type { BuildsService } from "@conveyor/proto/builds";
import type { OidcService } from "@conveyor/proto/oidc";
import { failedPrecondition, invalidFields, isUuid, notFound } from "@conveyor/runtime";
import type { ClusterRepository } from "../store/cluster-repository.js";
import { type OidcJobFacts, type OidcLimits, oidcClaims } from "./oidc-claims.js";
import type { OidcSigner } from "./oidc-signer.js";

export interface OidcRpcDeps {
  /** Null when CREDENTIALS_ENCRYPTION_KEY is unset: no key can be kept, so no token is signed. */
  signer: OidcSigner | null;
  builds: Pick<Client<typeof BuildsService>, "getJob" | "getBuild">;
  clusters: Pick<ClusterRepository, "findCluster">;
  limits: OidcLimits;
  now: () => Date;
}

const NO_KEY =
  "OIDC tokens need CREDENTIALS_ENCRYPTION_KEY, which the agents service does not have (docs/configuration.md)";

/** The OidcService: a running job's tokens, the key set, and rotation (docs/security.md#oidc-tokens). */
export function createOidcRpcs(deps: OidcRpcDeps): ServiceImpl<typeof OidcService> {
  const signerOrRefuse = () => {
    if (!deps.signer) throw failedPrecondition(NO_KEY);
    return deps.signer;
  };
  return {
    async issueOidcToken(req) {
      const signer = signerOrRefuse();
      const job = isUuid(req.jobId) ? (await deps.builds.getJob({ jobId: req.jobId })).job : undefined;
      // A job not held by this agent is not found: a credential cannot probe other jobs.
      if (!job || job.agent?.id !== req.agentId) throw notFound("job");
      if (!isRunningJobState(job.state)) {
        throw failedPrecondition(`OIDC tokens are issued only while the job runs; this job is ${job.state}`);
      }
      const { build } = await deps.builds.getBuild({ pipelineId: job.pipelineId, number: job.buildNumber });
      if (!build) throw notFound("build");
      const cluster =
        job.clusterId && req.claims.concat(req.awsSessionTags).includes("cluster_name")
          ? await deps.clusters.findCluster(job.organizationId, job.clusterId)
          : null;
      const facts: OidcJobFacts = {
        organizationId: job.organizationId,
        organizationSlug: req.organizationSlug,
        pipelineId: job.pipelineId,
        pipelineSlug: build.pipelineSlug,
        buildNumber: build.number,
        buildBranch: build.branch,
        buildTag: build.tag,
        buildCommit: build.commit,
        buildSource: build.source,
        stepKey: job.stepKey,
        jobId: job.id,
        agentId: req.agentId,
        clusterId: job.clusterId,
        clusterName: cluster?.name ?? "",
        queueId: job.clusterQueueId,
        queueKey: job.queue,
        agentTags: job.agent.metaData,
      };
      const answer = oidcClaims(
        facts,
        {
          issuer: req.issuer,
          audience: req.audience,
          lifetimeSeconds: req.lifetimeSeconds,
          claims: req.claims,
          awsSessionTags: req.awsSessionTags,
          subjectClaim: req.subjectClaim,
        },
        Math.floor(deps.now().getTime() / 1000),
        deps.limits,
      );
      if (!answer.ok) throw invalidFields(answer.errors);
      return { token: await signer.sign(answer.claims) };
    },

    async getOidcKeySet() {
      return { jwksJson: JSON.stringify(await signerOrRefuse().keySet()) };
    },

    async rotateOidcKey() {
      const key = await signerOrRefuse().rotate();
      return { keyId: key.kid, signsFrom: timestampFromDate(key.signsFrom) };
    },
  };
}
