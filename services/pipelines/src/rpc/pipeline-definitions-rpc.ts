/**
 * The pipeline definition RPCs: creating a pipeline and changing its attributes, each checked together (every
 * problem of a request is answered at once).
 */

import { randomBytes } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { PipelinesService } from "@conveyor/proto/pipelines";
import {
  alreadyExists,
  failedPrecondition,
  invalidFields,
  isUuid,
  newId,
  PIPELINE_ACCESS_LEVELS,
  SUBJECTS,
} from "@conveyor/runtime";
import { type FieldProblem, resolveAttributes } from "../domain/pipeline-attributes.js";
import { defaultProviderSettings, providerIdFor } from "../domain/provider.js";
import { newWebhookToken, webhookTokenHash } from "../domain/webhook-token.js";
import { DuplicatePipelineError, type PipelineChanges, type PipelineDoc } from "../store/pipelines-repository.js";
import { pipelineMessage } from "./pipeline-message.js";
import { changedMeanwhile, type PipelinesContext } from "./pipelines-context.js";

const token = () => randomBytes(24).toString("hex");

type PipelineDefinitionRpcs = Pick<ServiceImpl<typeof PipelinesService>, "createPipeline" | "updatePipeline">;

/** Creating pipelines and changing their attributes. */
export function createPipelineDefinitionRpcs(ctx: PipelinesContext): PipelineDefinitionRpcs {
  const { repo, now, requirePipeline, publishChanged, change } = ctx;

  /** Checks a cluster id given on create or update; "" on update removes the cluster. */
  const checkCluster = async (
    organizationId: string,
    clusterId: string | undefined,
    creating: boolean,
    errors: FieldProblem[],
  ) => {
    if (clusterId === undefined && !creating) return undefined;
    const id = (clusterId ?? "").trim();
    if (id === "") {
      if (creating) errors.push({ field: "cluster_id", code: "can't be blank" });
      return null;
    }
    if (!isUuid(id)) {
      errors.push({ field: "cluster_id", code: "is not a cluster of this organization" });
      return undefined;
    }
    try {
      await ctx.clusters.getCluster({ organizationId, id });
      return id;
    } catch (err) {
      if (ConnectError.from(err).code !== Code.NotFound) throw err;
      errors.push({ field: "cluster_id", code: "is not a cluster of this organization" });
      return undefined;
    }
  };

  /** Name and slug clashes, reported together with every other problem. */
  const checkUnique = async (
    organizationId: string,
    changes: PipelineChanges,
    errors: FieldProblem[],
    exceptId?: string,
  ) => {
    const taken = await repo.taken(organizationId, changes.nameKey, changes.slug, exceptId);
    if (taken.name) errors.push({ field: "name", code: "has already been taken" });
    if (taken.slug) errors.push({ field: "slug", code: "has already been taken" });
  };

  const duplicate = (err: unknown) => {
    if (err instanceof DuplicatePipelineError) return alreadyExists(err.field, "has already been taken", err);
    return err;
  };

  return {
    async createPipeline(req) {
      if (!isUuid(req.organizationId)) throw invalidFields([{ field: "organization_id", code: "must be a UUID" }]);
      const attrs = req.attributes ?? { $typeName: "ci.pipelines.v1.PipelineAttributes" };
      const { changes, errors } = resolveAttributes(attrs);
      const clusterId = await checkCluster(req.organizationId, attrs.clusterId, true, errors);

      const teams: Record<string, string> = {};
      const teamEntries = Object.entries(req.teams);
      if (teamEntries.length > 0 && !req.teamsEnabled) {
        errors.push({ field: "teams", code: "can only be given when the organization has teams enabled" });
      }
      if (req.teamsEnabled && teamEntries.length === 0 && !req.creatorIsAdmin) {
        errors.push({
          field: "teams",
          code: "must be given: only organization administrators can create a pipeline without teams",
        });
      }
      const levels: readonly string[] = PIPELINE_ACCESS_LEVELS.names;
      for (const [team, level] of teamEntries) {
        if (!isUuid(team)) errors.push({ field: `teams.${team}`, code: "is not a team UUID" });
        else if (!levels.includes(level)) {
          errors.push({ field: `teams.${team}`, code: `must be one of ${levels.join(", ")}` });
        } else teams[team] = level;
      }
      if (changes.nameKey !== undefined || changes.slug !== undefined)
        await checkUnique(req.organizationId, changes, errors);
      if (errors.length > 0) throw invalidFields(errors);

      const at = now();
      const webhookToken = newWebhookToken();
      const repository = changes.repository ?? "";
      const providerId = providerIdFor(repository);
      const creator = req.creator;
      const doc: PipelineDoc = {
        _id: newId(),
        organizationId: req.organizationId,
        slug: changes.slug ?? "",
        name: changes.name ?? "",
        nameKey: changes.nameKey ?? "",
        description: changes.description ?? null,
        repository,
        clusterId: clusterId ?? null,
        pipelineTemplateUuid: changes.pipelineTemplateUuid ?? null,
        branchConfiguration: changes.branchConfiguration ?? null,
        defaultBranch: changes.defaultBranch ?? "main",
        provider: {
          ...(changes.provider ?? { id: providerId, settings: defaultProviderSettings(providerId, repository) }),
          webhookToken,
          webhookTokenHash: webhookTokenHash(webhookToken),
        },
        skipQueuedBranchBuilds: changes.skipQueuedBranchBuilds ?? false,
        skipQueuedBranchBuildsFilter: changes.skipQueuedBranchBuildsFilter ?? null,
        cancelRunningBranchBuilds: changes.cancelRunningBranchBuilds ?? false,
        cancelRunningBranchBuildsFilter: changes.cancelRunningBranchBuildsFilter ?? null,
        allowRebuilds: changes.allowRebuilds ?? true,
        createdBy: {
          id: creator?.id ?? "",
          name: creator?.name ?? "",
          email: creator?.email ?? "",
          avatarUrl: creator?.avatarUrl || null,
          createdAt: creator?.createdAt ? timestampDate(creator.createdAt) : null,
        },
        createdAt: at,
        updatedAt: at,
        archivedAt: null,
        env: changes.env ?? {},
        defaultCommandStepTimeout: changes.defaultCommandStepTimeout ?? null,
        maximumCommandStepTimeout: changes.maximumCommandStepTimeout ?? null,
        visibility: changes.visibility ?? "private",
        tags: changes.tags ?? null,
        configuration: changes.configuration ?? "",
        definitionJson: changes.definitionJson ?? '{"steps":[],"env":{}}',
        counts: { scheduledBuilds: 0, runningBuilds: 0, scheduledJobs: 0, runningJobs: 0, waitingJobs: 0 },
        teams,
        badgeToken: token(),
      };
      try {
        await repo.insert(doc);
      } catch (err) {
        throw duplicate(err);
      }
      await publishChanged(SUBJECTS.pipelines.created, doc);
      return { pipeline: pipelineMessage(doc) };
    },

    async updatePipeline(req) {
      const found = await requirePipeline(req.organizationId, req.pipeline);
      const archived = () => failedPrecondition("Pipeline is archived: unarchive it before changing it.");
      const updated = await change(
        req.organizationId,
        found._id,
        async (current) => {
          if (current.archivedAt) throw archived();
          const attrs = req.attributes ?? { $typeName: "ci.pipelines.v1.PipelineAttributes" };
          const { changes, errors } = resolveAttributes(attrs, current);
          const clusterId = await checkCluster(req.organizationId, attrs.clusterId, false, errors);
          if (clusterId !== undefined) changes.clusterId = clusterId;
          const renamed: PipelineChanges = {};
          if (changes.nameKey !== undefined && changes.nameKey !== current.nameKey) renamed.nameKey = changes.nameKey;
          if (changes.slug !== undefined && changes.slug !== current.slug) renamed.slug = changes.slug;
          await checkUnique(req.organizationId, renamed, errors, current._id);
          if (errors.length > 0) throw invalidFields(errors);
          return (version) =>
            repo
              .updateActive(req.organizationId, current._id, { ...changes, updatedAt: now() }, version)
              .catch((err: unknown) => {
                throw duplicate(err);
              });
        },
        // Archived between our read and our write (a pipeline deleted meanwhile is not found).
        (latest) => (latest.archivedAt ? archived() : changedMeanwhile()),
      );
      await publishChanged(SUBJECTS.pipelines.updated, updated);
      return { pipeline: pipelineMessage(updated) };
    },
  };
}
