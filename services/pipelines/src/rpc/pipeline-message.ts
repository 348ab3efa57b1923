import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PipelineStep } from "@conveyor/ci-rules";
import type { PipelineSchema } from "@conveyor/proto/pipelines";
import { stepMessages, toTimestamp } from "@conveyor/runtime";
import type { PipelineDoc } from "../store/pipelines-repository.js";

/** The stored definition: steps and the YAML's top-level env. */
function parseDefinition(doc: Pick<PipelineDoc, "definitionJson">): {
  steps: PipelineStep[];
  env: Record<string, string>;
} {
  const parsed = JSON.parse(doc.definitionJson || "{}") as { steps?: PipelineStep[]; env?: Record<string, string> };
  return { steps: parsed.steps ?? [], env: parsed.env ?? {} };
}

/** A stored pipeline as the Pipeline message. */
export function pipelineMessage(p: PipelineDoc): MessageInitShape<typeof PipelineSchema> {
  const definition = parseDefinition(p);
  return {
    ...pipelineFields(p, p.provider.webhookSecret ?? ""),
    configuration: p.configuration,
    steps: stepMessages(definition.steps),
    configurationEnv: definition.env,
  };
}

/**
 * A stored pipeline as its events carry it: without its definition (configuration, steps and the YAML's env), the
 * one part whose size grows with what users write, and without its webhook secret, which only the webhook receiver
 * and the pipeline's managers need (they read the pipeline). Every other field is bounded (domain/pipeline-attributes.ts), so an event
 * stays far below NATS's largest message (1 MiB by default) and is never dropped; consumers that need the steps
 * read the pipeline.
 */
export function pipelineEventMessage(p: PipelineDoc): MessageInitShape<typeof PipelineSchema> {
  return pipelineFields(p, "");
}

/** Every field of the Pipeline message but the definition, with the webhook secret given. */
function pipelineFields(p: PipelineDoc, webhookSecret: string) {
  return {
    id: p._id,
    organizationId: p.organizationId,
    slug: p.slug,
    name: p.name,
    description: p.description ?? undefined,
    repository: p.repository,
    clusterId: p.clusterId ?? undefined,
    pipelineTemplateUuid: p.pipelineTemplateUuid ?? undefined,
    branchConfiguration: p.branchConfiguration ?? undefined,
    defaultBranch: p.defaultBranch,
    provider: {
      id: p.provider.id,
      settings: p.provider.settings,
      webhookToken: p.provider.webhookToken,
      webhookSecret,
    },
    skipQueuedBranchBuilds: p.skipQueuedBranchBuilds,
    skipQueuedBranchBuildsFilter: p.skipQueuedBranchBuildsFilter ?? undefined,
    cancelRunningBranchBuilds: p.cancelRunningBranchBuilds,
    cancelRunningBranchBuildsFilter: p.cancelRunningBranchBuildsFilter ?? undefined,
    allowRebuilds: p.allowRebuilds,
    createdBy: {
      id: p.createdBy.id,
      name: p.createdBy.name,
      email: p.createdBy.email,
      avatarUrl: p.createdBy.avatarUrl ?? "",
      createdAt: toTimestamp(p.createdBy.createdAt),
    },
    createdAt: toTimestamp(p.createdAt),
    updatedAt: toTimestamp(p.updatedAt),
    archivedAt: toTimestamp(p.archivedAt),
    version: p.version ?? 0,
    env: p.env,
    defaultCommandStepTimeout: p.defaultCommandStepTimeout ?? undefined,
    maximumCommandStepTimeout: p.maximumCommandStepTimeout ?? undefined,
    visibility: p.visibility,
    tags: p.tags ? { values: p.tags } : undefined,
    counts: p.counts,
    teams: p.teams,
    badgeToken: p.badgeToken,
  };
}
