import { randomBytes } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AgentsService } from "@conveyor/proto/agents";
import {
  ArchiveFilter,
  PipelineChangedSchema,
  PipelineDeletedSchema,
  type PipelinesService,
} from "@conveyor/proto/pipelines";
import {
  alreadyExists,
  type Client,
  createKeyedLock,
  type EventPublisher,
  encodeEvent,
  type Fences,
  failedPrecondition,
  invalidFields,
  isUuid,
  newId,
  notFound,
  type Outbox,
  pageWindow,
  pipelineFence,
  SUBJECTS,
} from "@conveyor/runtime";
import { deletionKey } from "./deletion-outbox.js";
import { type FieldProblem, resolveAttributes } from "./pipeline-attributes.js";
import { pipelineEventMessage, pipelineMessage } from "./pipeline-message.js";
import {
  DuplicatePipelineError,
  type PipelineChanges,
  type PipelineDoc,
  type PipelinesRepository,
  type ArchiveFilter as RepoArchiveFilter,
} from "./pipelines-repository.js";
import { defaultProviderSettings, providerIdFor } from "./provider.js";

/** A change that kept meeting another process's changes of the same pipeline. */
const changedMeanwhile = () =>
  new ConnectError("The pipeline kept changing while this change was made: try again.", Code.Aborted);

const TEAM_ACCESS_LEVELS = ["read_only", "build_and_read", "manage_build_and_read"];

export interface PipelinesServiceDeps {
  repo: PipelinesRepository;
  events: EventPublisher;
  /** Holds deletion events until JetStream has them (createPipelinesOutbox). */
  outbox: Outbox;
  /** Clusters belong to the agents service; a pipeline's cluster must exist in its organization. */
  clusters: Pick<Client<typeof AgentsService>, "getCluster">;
  /**
   * Where each change a build depends on is announced before it is written (fences.ts), so that the builds service
   * can trust a cached copy of a pipeline. Absent in tests without NATS.
   */
  fences?: Pick<Fences, "raise">;
  now?: () => Date;
}

/** How often a change is tried again when another process changed the pipeline between its read and its write. */
const MAX_CHANGE_ATTEMPTS = 5;

const token = () => randomBytes(24).toString("hex");

const ARCHIVE_FILTERS: Record<ArchiveFilter, RepoArchiveFilter> = {
  [ArchiveFilter.UNSPECIFIED]: "active",
  [ArchiveFilter.ACTIVE]: "active",
  [ArchiveFilter.ARCHIVED]: "archived",
  [ArchiveFilter.ALL]: "all",
};

/** The pipelines service: definitions, validation, archive state, and their events. */
export function createPipelinesService(deps: PipelinesServiceDeps): ServiceImpl<typeof PipelinesService> {
  const { repo, events } = deps;
  const now = deps.now ?? (() => new Date());
  // Serializes read-check-write sections per pipeline; see createKeyedLock for why conditional updates alone are
  // not enough on FerretDB.
  const withLock = createKeyedLock();

  const requirePipeline = async (organizationId: string, ref: string): Promise<PipelineDoc> => {
    const pipeline = ref === "" ? null : await repo.find(organizationId, ref);
    if (!pipeline) throw notFound("pipeline");
    return pipeline;
  };

  const publishChanged = (subject: string, p: PipelineDoc) =>
    events.publish(subject, PipelineChangedSchema, { pipeline: pipelineEventMessage(p) });

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
      await deps.clusters.getCluster({ organizationId, id });
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

  /**
   * Makes a change a build's admission or plan depends on, under the pipeline's lock: reads the pipeline, checks the
   * change against it (`plan` throws when it cannot be made, and returns its write), raises the pipeline's fence to
   * the version the change will carry, then writes on the version read. The write answers null when the pipeline was
   * not in the state the change needs, or at another version: another process changed it in between, and the change
   * is planned again on what it wrote. `refused` says why a change cannot be made to `latest`.
   */
  const change = (
    organizationId: string,
    ref: string,
    plan: (current: PipelineDoc) => Promise<(version: number) => Promise<PipelineDoc | null>>,
    refused: (latest: PipelineDoc) => Error,
  ): Promise<PipelineDoc> =>
    withLock(ref, async () => {
      for (let attempt = 1; ; attempt++) {
        const current = await requirePipeline(organizationId, ref);
        const write = await plan(current);
        const version = current.version ?? 0;
        await deps.fences?.raise(pipelineFence(current._id), version + 1);
        const written = await write(version);
        if (written) return written;
        const latest = await requirePipeline(organizationId, ref);
        if ((latest.version ?? 0) === version || attempt >= MAX_CHANGE_ATTEMPTS) throw refused(latest);
      }
    });

  return {
    async listPipelines(req) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      const page = await repo.list(
        req.organizationId,
        ARCHIVE_FILTERS[req.archiveFilter],
        skip,
        perPage,
        req.pipelineIds,
      );
      return { pipelines: page.items.map(pipelineMessage), totalCount: page.total };
    },

    async getPipeline(req) {
      return { pipeline: pipelineMessage(await requirePipeline(req.organizationId, req.pipeline)) };
    },

    async batchGetPipelines(req) {
      const found = req.ids.length === 0 ? [] : await repo.findMany(req.organizationIds, req.ids);
      return { pipelines: found.map(pipelineMessage) };
    },

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
      for (const [team, level] of teamEntries) {
        if (!isUuid(team)) errors.push({ field: `teams.${team}`, code: "is not a team UUID" });
        else if (!TEAM_ACCESS_LEVELS.includes(level)) {
          errors.push({ field: `teams.${team}`, code: `must be one of ${TEAM_ACCESS_LEVELS.join(", ")}` });
        } else teams[team] = level;
      }
      if (changes.nameKey !== undefined || changes.slug !== undefined)
        await checkUnique(req.organizationId, changes, errors);
      if (errors.length > 0) throw invalidFields(errors);

      const at = now();
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
        provider: changes.provider
          ? { ...changes.provider, webhookToken: token() }
          : { id: providerId, settings: defaultProviderSettings(providerId, repository), webhookToken: token() },
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

    async archivePipeline(req) {
      const found = await requirePipeline(req.organizationId, req.pipeline);
      const refused = () => failedPrecondition("Pipeline could not be archived.");
      const updated = await change(
        req.organizationId,
        found._id,
        async (current) => {
          if (current.archivedAt) throw refused();
          return (version) => {
            const at = now();
            return repo.setArchived(req.organizationId, current._id, at, at, version);
          };
        },
        refused,
      );
      await publishChanged(SUBJECTS.pipelines.archived, updated);
      return { pipeline: pipelineMessage(updated) };
    },

    async unarchivePipeline(req) {
      const found = await requirePipeline(req.organizationId, req.pipeline);
      const refused = () => failedPrecondition("Pipeline could not be unarchived.");
      const updated = await change(
        req.organizationId,
        found._id,
        async (current) => {
          if (!current.archivedAt) throw refused();
          return (version) => repo.setArchived(req.organizationId, current._id, null, now(), version);
        },
        refused,
      );
      await publishChanged(SUBJECTS.pipelines.unarchived, updated);
      return { pipeline: pipelineMessage(updated) };
    },

    async deletePipeline(req) {
      const found = await requirePipeline(req.organizationId, req.pipeline);
      return withLock(found._id, async () => {
        const current = await requirePipeline(req.organizationId, found._id);
        // No build may be admitted on a copy read before the deletion: the fence goes up first (see `change`).
        await deps.fences?.raise(pipelineFence(current._id), (current.version ?? 0) + 1);
        // The event is durable before the pipeline goes (identity drops its team associations and rules on it);
        // the relay publishes it if this process cannot, and drops it if the deletion never happened.
        const key = deletionKey(current._id);
        const event = encodeEvent(SUBJECTS.pipelines.deleted, PipelineDeletedSchema, {
          pipelineId: current._id,
          organizationId: current.organizationId,
          slug: current.slug,
        });
        const version = await deps.outbox.record(key, event);
        if (!(await repo.delete(req.organizationId, current._id))) {
          await deps.outbox.discard(key, version);
          throw notFound("pipeline");
        }
        await deps.outbox.send(key, version, event);
        return {};
      });
    },
  };
}
