import type { Client, ServiceImpl } from "@connectrpc/connect";
import { isRunningJobState } from "@conveyor/ci-rules";
import type { BuildsService } from "@conveyor/proto/builds";
import type { SecretActor, SecretsService } from "@conveyor/proto/secrets";
import {
  alreadyExists,
  EnvelopeKeyError,
  type EnvelopeKind,
  failedPrecondition,
  invalidFields,
  isUuid,
  type KeyRing,
  type Logger,
  newId,
  notFound,
  openValue,
  rewrapValue,
  sealValue,
} from "@conveyor/runtime";
import type { ClusterRepository } from "../store/cluster-repository.js";
import { readMessage, secretMessage } from "./secret-message.js";
import { type JobClaims, PolicyError, parsePolicy, policyAllows } from "./secret-policy.js";
import {
  type ActorDoc,
  DuplicateSecretError,
  type SecretDoc,
  type SecretReadDoc,
  type SecretRepository,
} from "./secret-repository.js";
import {
  keyIdentity,
  MAX_SECRETS_PER_CLUSTER,
  secretDescriptionProblem,
  secretKeyProblem,
  secretValueProblem,
} from "./secret-rules.js";

/** What the secrets RPCs need. */
export interface SecretsRpcDeps {
  secrets: SecretRepository;
  clusters: Pick<ClusterRepository, "findCluster">;
  builds: Pick<Client<typeof BuildsService>, "getJob" | "getBuild">;
  /** The keys values are sealed with; null when none is configured (nothing can be sealed or opened). */
  keyRing: KeyRing | null;
  logger: Logger;
  now: () => Date;
}

/** The most reads one list answers. */
export const READS_LIST_LIMIT = 100;

const KIND: EnvelopeKind = { record: "cluster-secret", value: "secret value" };
/** What a secret's value is sealed to: its organization, cluster and id (a value copied elsewhere does not open). */
const bindingOf = (s: Pick<SecretDoc, "_id" | "organizationId" | "clusterId">) =>
  `${s.organizationId}/${s.clusterId}/${s._id}`;

const actorDoc = (a: SecretActor | undefined): ActorDoc | null =>
  a?.id ? { id: a.id, name: a.name, email: a.email } : null;

/** The cluster secrets (docs/security.md#cluster-secrets): administrators' CRUD and jobs' reads. */
export function createSecretsRpcs(deps: SecretsRpcDeps): ServiceImpl<typeof SecretsService> {
  const { secrets, now, logger } = deps;

  const ring = (): KeyRing => {
    if (!deps.keyRing)
      throw failedPrecondition(
        "Cluster secrets need CREDENTIALS_ENCRYPTION_KEY, which the agents service does not have (docs/configuration.md)",
      );
    return deps.keyRing;
  };
  const check = (field: string, problem: string | undefined) => {
    if (problem) throw invalidFields([{ field, code: problem }]);
  };
  const policyText = (text: string) => {
    try {
      parsePolicy(text);
      return text.trim() === "" ? "" : text;
    } catch (err) {
      if (err instanceof PolicyError) throw invalidFields([{ field: "policy", code: err.message }]);
      throw err;
    }
  };
  const clusterOf = async (organizationId: string, clusterId: string) => {
    const cluster = isUuid(clusterId) ? await deps.clusters.findCluster(organizationId, clusterId) : null;
    if (!cluster) throw notFound("cluster");
    return cluster;
  };
  const secretOf = async (organizationId: string, clusterId: string, id: string) => {
    await clusterOf(organizationId, clusterId);
    const secret = isUuid(id) ? await secrets.find(organizationId, clusterId, id) : null;
    if (!secret) throw notFound("secret");
    return secret;
  };

  /** Records a read (allowed or refused) and logs it without any value. */
  const record = async (read: Omit<SecretReadDoc, "_id" | "readAt">) => {
    const doc: SecretReadDoc = { _id: newId(), readAt: now(), ...read };
    logger.info(
      { secretId: doc.secretId, key: doc.key, jobId: doc.jobId, agentId: doc.agentId, allowed: doc.allowed },
      doc.allowed ? "cluster secret read" : `cluster secret read refused: ${doc.reason}`,
    );
    await secrets.insertRead(doc);
    if (doc.allowed && doc.secretId) await secrets.markRead(doc.secretId, doc.readAt);
  };

  return {
    async createClusterSecret(req) {
      const keyRing = ring();
      check("key", secretKeyProblem(req.key));
      check("value", secretValueProblem(req.value));
      check("description", secretDescriptionProblem(req.description));
      const policy = policyText(req.policy);
      const cluster = await clusterOf(req.organizationId, req.clusterId);
      if ((await secrets.count(req.organizationId, cluster._id)) >= MAX_SECRETS_PER_CLUSTER)
        throw failedPrecondition(`A cluster holds at most ${MAX_SECRETS_PER_CLUSTER} secrets`);
      const at = now();
      const id = newId();
      const ids = { _id: id, organizationId: req.organizationId, clusterId: cluster._id };
      const doc: SecretDoc = {
        ...ids,
        key: req.key,
        keyLower: keyIdentity(req.key),
        description: req.description,
        policy,
        value: sealValue(keyRing, KIND, bindingOf(ids), req.value),
        createdAt: at,
        createdBy: actorDoc(req.actor),
        updatedAt: at,
        updatedBy: null,
        lastReadAt: null,
      };
      try {
        await secrets.insert(doc);
      } catch (err) {
        if (err instanceof DuplicateSecretError) throw alreadyExists("key", "has already been taken", err);
        throw err;
      }
      return { secret: secretMessage(doc) };
    },

    async getClusterSecret(req) {
      return { secret: secretMessage(await secretOf(req.organizationId, req.clusterId, req.id)) };
    },

    async listClusterSecrets(req) {
      const cluster = await clusterOf(req.organizationId, req.clusterId);
      const list = await secrets.list(req.organizationId, cluster._id, MAX_SECRETS_PER_CLUSTER);
      return { secrets: list.map(secretMessage) };
    },

    async updateClusterSecret(req) {
      if (req.description !== undefined) check("description", secretDescriptionProblem(req.description));
      const policy = req.policy !== undefined ? policyText(req.policy) : undefined;
      const found = await secretOf(req.organizationId, req.clusterId, req.id);
      const updated = await secrets.update(req.organizationId, found.clusterId, found._id, {
        ...(req.description !== undefined ? { description: req.description } : {}),
        ...(policy !== undefined ? { policy } : {}),
        updatedAt: now(),
        updatedBy: actorDoc(req.actor),
      });
      if (!updated) throw notFound("secret");
      return { secret: secretMessage(updated) };
    },

    async updateClusterSecretValue(req) {
      const keyRing = ring();
      check("value", secretValueProblem(req.value));
      const found = await secretOf(req.organizationId, req.clusterId, req.id);
      const updated = await secrets.update(req.organizationId, found.clusterId, found._id, {
        value: sealValue(keyRing, KIND, bindingOf(found), req.value),
        updatedAt: now(),
        updatedBy: actorDoc(req.actor),
      });
      if (!updated) throw notFound("secret");
      return { secret: secretMessage(updated) };
    },

    async deleteClusterSecret(req) {
      const found = await secretOf(req.organizationId, req.clusterId, req.id);
      if (!(await secrets.remove(req.organizationId, found.clusterId, found._id))) throw notFound("secret");
      return {};
    },

    async listClusterSecretReads(req) {
      const found = await secretOf(req.organizationId, req.clusterId, req.id);
      return { reads: (await secrets.listReads(req.organizationId, found._id, READS_LIST_LIMIT)).map(readMessage) };
    },

    async readJobSecret(req) {
      if (req.key === "" || req.key.length > 255) throw notFound("secret");
      const job = isUuid(req.jobId) ? (await deps.builds.getJob({ jobId: req.jobId })).job : undefined;
      // A job of another organization, or not held by this agent, is not found: a token cannot probe others' jobs.
      if (!job || job.organizationId !== req.organizationId || job.agent?.id !== req.agentId) throw notFound("job");
      const base = {
        organizationId: job.organizationId,
        clusterId: job.clusterId,
        key: req.key,
        jobId: job.id,
        buildId: job.buildId,
        agentId: req.agentId,
      };
      const secret = job.clusterId
        ? await secrets.findByKey(job.organizationId, job.clusterId, keyIdentity(req.key))
        : null;
      const { build } = await deps.builds.getBuild({ pipelineId: job.pipelineId, number: job.buildNumber });
      const claims: JobClaims = {
        pipeline_slug: build?.pipelineSlug ?? "",
        pipeline_id: job.pipelineId,
        build_branch: build?.branch ?? "",
        build_source: build?.source ?? "",
        build_creator: build?.creator?.email ?? "",
        cluster_queue_id: job.clusterQueueId,
        cluster_queue_key: job.queue,
      };
      const seen = {
        ...base,
        secretId: secret?._id ?? "",
        pipelineSlug: claims.pipeline_slug,
        branch: claims.build_branch,
      };
      const refuse = async (reason: string) => record({ ...seen, allowed: false, reason });
      if (!isRunningJobState(job.state)) {
        await refuse(`the job is ${job.state}, not running`);
        throw failedPrecondition(`Secrets are read only while the job runs; this job is ${job.state}`);
      }
      if (!secret) {
        await refuse("the job's cluster has no secret of this key");
        throw notFound("secret");
      }
      let allowed: boolean;
      try {
        allowed = policyAllows(parsePolicy(secret.policy), claims);
      } catch (err) {
        // A stored policy was checked when it was written; one that no longer parses allows nothing.
        if (!(err instanceof PolicyError)) throw err;
        allowed = false;
      }
      if (!allowed) {
        await refuse("its access policy does not allow this job");
        throw failedPrecondition(
          `The access policy of secret ${secret.key} does not allow this job (pipeline_slug ${JSON.stringify(claims.pipeline_slug)}, build_branch ${JSON.stringify(claims.build_branch)})`,
        );
      }
      let value: string;
      try {
        value = openValue(ring(), KIND, bindingOf(secret), secret.value);
      } catch (err) {
        if (!(err instanceof EnvelopeKeyError)) throw err;
        logger.error({ secretId: secret._id, err: err.message }, "a cluster secret's value does not open");
        await refuse("its value could not be opened");
        throw failedPrecondition(
          `The value of secret ${secret.key} cannot be opened here (see the agents service's log)`,
        );
      }
      await record({ ...seen, allowed: true, reason: "" });
      return { id: secret._id, key: secret.key, value };
    },
  };
}

/**
 * Rewraps every secret's data key sealed under another key than the ring's current one (docs/operations.md#rotating-the-credentials-key):
 * a compare-and-set on the key id, so replicas doing it together are safe. Returns how many moved and the ids of
 * those that could not be opened (their key is not held, or they were altered).
 */
export async function rewrapSecrets(
  secrets: SecretRepository,
  ring: KeyRing,
): Promise<{ rewrapped: number; unopened: string[] }> {
  let rewrapped = 0;
  const unopened: string[] = [];
  let after = "";
  for (;;) {
    const page = await secrets.page(after, 200);
    if (page.length === 0) break;
    for (const doc of page) {
      if (doc.value.keyId === ring.current.id) continue;
      try {
        const next = rewrapValue(ring, KIND, bindingOf(doc), doc.value);
        if (await secrets.replaceValue(doc._id, doc.value.keyId, next)) rewrapped++;
      } catch (err) {
        if (!(err instanceof EnvelopeKeyError)) throw err;
        unopened.push(doc._id);
      }
    }
    after = page[page.length - 1]?._id ?? after;
  }
  return { rewrapped, unopened };
}
