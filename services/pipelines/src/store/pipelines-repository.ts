import { isDuplicateKeyError, isUuid } from "@conveyor/runtime";
import { type Collection, type Db, type Filter, MongoServerError } from "mongodb";
import type { ProviderSettings } from "../domain/provider.js";
import { webhookTokenHash } from "../domain/webhook-token.js";

export interface CreatorDoc {
  id: string;
  name: string;
  email: string;
  avatarUrl: string | null;
  createdAt: Date | null;
}

export interface PipelineCountsDoc {
  scheduledBuilds: number;
  runningBuilds: number;
  scheduledJobs: number;
  runningJobs: number;
  waitingJobs: number;
}

export interface PipelineDoc {
  _id: string;
  organizationId: string;
  slug: string;
  name: string;
  /** Lower-cased name: names are unique within an organization regardless of case, and lists sort by it. */
  nameKey: string;
  description: string | null;
  repository: string;
  clusterId: string | null;
  pipelineTemplateUuid: string | null;
  branchConfiguration: string | null;
  defaultBranch: string;
  provider: ProviderDoc;
  skipQueuedBranchBuilds: boolean;
  skipQueuedBranchBuildsFilter: string | null;
  cancelRunningBranchBuilds: boolean;
  cancelRunningBranchBuildsFilter: string | null;
  allowRebuilds: boolean;
  createdBy: CreatorDoc;
  createdAt: Date;
  updatedAt: Date;
  archivedAt: Date | null;
  /**
   * "archived" when archivedAt is set, else "active": what lists filter on, kept by the repository with archivedAt
   * (and filled in at start for pipelines stored before it). A string, unlike archivedAt's null, is a condition the
   * bundled FerretDB answers from the `{organizationId, archiveState, nameKey}` index and counts without reading a
   * document (deploy/ferretdb/index-pushdown.patch, count-pushdown.patch).
   */
  archiveState?: ArchiveState;
  env: Record<string, string>;
  /** Minutes a command step may run when it sets no timeout; absent on pipelines stored before it existed. */
  defaultCommandStepTimeout?: number | null;
  /** Minutes no command step may run past. */
  maximumCommandStepTimeout?: number | null;
  visibility: "private" | "public";
  tags: string[] | null;
  configuration: string;
  /**
   * The parsed definition, {"steps": [...], "env": {...}} (the YAML's top-level env), as JSON text: step
   * attributes are user data (env keys may hold dots), which document stores restrict in field names.
   */
  definitionJson: string;
  counts: PipelineCountsDoc;
  /** When the counters were taken by the builds service. */
  countsAt?: Date;
  /** Team UUID → access level. */
  teams: Record<string, string>;
  badgeToken: string;
  /** Changes a build depends on so far (Pipeline.version in the proto); absent on pipelines stored before it. */
  version?: number;
}

/** A pipeline's source provider: its id, settings, and the webhook URL's token and signing secret. */
export interface ProviderDoc {
  id: string;
  settings: ProviderSettings;
  /** The secret part of the pipeline's webhook URL. */
  webhookToken: string;
  /**
   * The token's SHA-256 (domain/webhook-token.ts), what a delivery's pipeline is looked up by; absent on pipelines
   * stored before it, which the repository fills in at start.
   */
  webhookTokenHash?: string;
  /** The secret deliveries are signed with; absent or "" when the pipeline has none. */
  webhookSecret?: string;
}

/** The mutable attributes of a pipeline. */
export type PipelineChanges = Partial<
  Omit<PipelineDoc, "_id" | "organizationId" | "createdBy" | "createdAt" | "counts" | "archivedAt" | "archiveState">
>;

/** Raised when a write clashes with a unique index; `field` is "name" or "slug". */
export class DuplicatePipelineError extends Error {
  override name = "DuplicatePipelineError";
  constructor(
    readonly field: "name" | "slug",
    options?: ErrorOptions,
  ) {
    super(`duplicate pipeline ${field}`, options);
  }
}

export type ArchiveFilter = "active" | "archived" | "all";

/** A pipeline's archiveState. */
export type ArchiveState = Exclude<ArchiveFilter, "all">;

/** The archiveState that goes with an archivedAt. */
export const archiveStateOf = (archivedAt: Date | null): ArchiveState => (archivedAt ? "archived" : "active");

/** Persistence of pipelines. */
export interface PipelinesRepository {
  insert(doc: PipelineDoc): Promise<void>;
  /** By UUID or slug within an organization. */
  find(organizationId: string, idOrSlug: string): Promise<PipelineDoc | null>;
  /** Which of the given name key and slug are taken in the organization by a pipeline other than `exceptId`. */
  taken(
    organizationId: string,
    nameKey: string | undefined,
    slug: string | undefined,
    exceptId?: string,
  ): Promise<{ name: boolean; slug: boolean }>;
  findMany(organizationIds: readonly string[], ids: readonly string[]): Promise<PipelineDoc[]>;
  /** The pipeline whose status badge carries this token, in any organization. */
  findByBadgeToken(badgeToken: string): Promise<PipelineDoc | null>;
  /** The pipeline whose webhook token has this SHA-256 (domain/webhook-token.ts), in any organization. */
  findByWebhookTokenHash(hash: string): Promise<PipelineDoc | null>;
  /** Sets the live counters if `at` is newer than the ones stored (events may arrive out of order). */
  setCounts(id: string, counts: PipelineCountsDoc, at: Date): Promise<void>;
  /**
   * One page of an organization's pipelines by name; only those among `onlyIds` when that is not empty, and only those
   * of cluster `clusterId` when it is given.
   */
  list(
    organizationId: string,
    filter: ArchiveFilter,
    skip: number,
    limit: number,
    onlyIds?: readonly string[],
    clusterId?: string,
  ): Promise<{ items: PipelineDoc[]; total: number }>;
  /**
   * Applies the changes to an active pipeline at `version`, which becomes `version + 1`; null when it does not exist,
   * is archived or is at another version.
   */
  updateActive(
    organizationId: string,
    id: string,
    changes: PipelineChanges,
    version: number,
  ): Promise<PipelineDoc | null>;
  /**
   * Sets or clears archivedAt when the pipeline is in the opposite state at `version`, which becomes `version + 1`;
   * null when it is not.
   */
  setArchived(
    organizationId: string,
    id: string,
    archivedAt: Date | null,
    now: Date,
    version: number,
  ): Promise<PipelineDoc | null>;
  delete(organizationId: string, id: string): Promise<boolean>;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoPipelinesRepository(db: Db): Promise<PipelinesRepository> {
  const pipelines: Collection<PipelineDoc> = db.collection("pipelines");
  await Promise.all([
    pipelines.createIndex({ organizationId: 1, slug: 1 }, { unique: true, name: "org_slug_unique" }),
    pipelines.createIndex({ organizationId: 1, nameKey: 1 }, { unique: true, name: "org_name_unique" }),
    // The lists' order (by name) within an organization's active or archived pipelines.
    pipelines.createIndex({ organizationId: 1, archiveState: 1, nameKey: 1 }, { name: "org_archive_state_name" }),
    // The public badge route's lookup. Not unique: tokens are random (unique in practice), and a unique index would
    // refuse to build over any old document without one.
    pipelines.createIndex({ badgeToken: 1 }, { name: "badge_token" }),
    // The webhook receiver's lookup, by the token's hash; not unique for the same reason.
    pipelines.createIndex({ "provider.webhookTokenHash": 1 }, { name: "webhook_token_hash" }),
  ]);
  await Promise.all([
    hashWebhookTokens(pipelines),
    fillArchiveStates(pipelines),
    dropRetiredIndex(pipelines, "org_archive_name_order"),
  ]);

  /**
   * Turns a duplicate key error into which attribute clashed. Real MongoDB names the index in keyPattern; FerretDB
   * does not, so the clash is looked up.
   */
  const translate = async (
    err: unknown,
    organizationId: string,
    nameKey: string | undefined,
    slug: string | undefined,
    exceptId?: string,
  ): Promise<never> => {
    if (!isDuplicateKeyError(err)) throw err;
    let field = duplicateField(err);
    if (!field) {
      const clash = await taken(organizationId, nameKey, slug, exceptId);
      field = clash.name ? "name" : "slug";
    }
    throw new DuplicatePipelineError(field, { cause: err });
  };
  const taken: PipelinesRepository["taken"] = async (organizationId, nameKey, slug, exceptId) => {
    const or: Array<Record<string, string>> = [];
    if (nameKey !== undefined) or.push({ nameKey });
    if (slug !== undefined) or.push({ slug });
    if (or.length === 0) return { name: false, slug: false };
    const found = await pipelines
      .find({ organizationId, $or: or, ...(exceptId ? { _id: { $ne: exceptId } } : {}) })
      .project<{ nameKey: string; slug: string }>({ nameKey: 1, slug: 1 })
      .toArray();
    return {
      name: nameKey !== undefined && found.some((p) => p.nameKey === nameKey),
      slug: slug !== undefined && found.some((p) => p.slug === slug),
    };
  };
  /**
   * How many pipelines match a filter, with the `count` command: the bundled FerretDB answers it from an index
   * without reading a document when the filter only compares strings (deploy/ferretdb/count-pushdown.patch), as a
   * list's does; countDocuments is an aggregation, which it answers by reading and decoding every match.
   */
  const countOf = async (query: Filter<PipelineDoc>): Promise<number> => {
    const res = await db.command({ count: pipelines.collectionName, query });
    return Number(res.n ?? 0);
  };
  // A pipeline named by id or by slug: two point lookups, each on an index. One query with `$or` of both is not
  // index-backed on the bundled FerretDB: it decoded every pipeline of the organization, on every build created.
  const byRef = async (organizationId: string, idOrSlug: string) =>
    (isUuid(idOrSlug) ? await pipelines.findOne({ _id: idOrSlug, organizationId }) : null) ??
    (await pipelines.findOne({ organizationId, slug: idOrSlug }));

  return {
    async insert(doc) {
      await pipelines
        .insertOne({ ...doc, archiveState: archiveStateOf(doc.archivedAt) })
        .catch((err) => translate(err, doc.organizationId, doc.nameKey, doc.slug));
    },
    find: byRef,
    taken,
    findMany: (organizationIds, ids) =>
      pipelines.find({ _id: { $in: [...ids] }, organizationId: { $in: [...organizationIds] } }).toArray(),
    findByBadgeToken: (badgeToken) => pipelines.findOne({ badgeToken }),
    findByWebhookTokenHash: (hash) => pipelines.findOne({ "provider.webhookTokenHash": hash }),
    async setCounts(id, counts, at) {
      await pipelines.updateOne(
        { _id: id, $or: [{ countsAt: { $exists: false } }, { countsAt: { $lt: at } }] },
        { $set: { counts, countsAt: at } },
      );
    },
    async list(organizationId, filter, skip, limit, onlyIds, clusterId) {
      const scope = {
        organizationId,
        ...(onlyIds?.length ? { _id: { $in: [...onlyIds] } } : {}),
        // Asked only before a cluster is deleted: the organization's index narrows it, no index of its own.
        ...(clusterId ? { clusterId } : {}),
      };
      // Strings only: served by an index in name order, and counted from it (see archiveState).
      const query = filter === "all" ? scope : { ...scope, archiveState: filter };
      const [items, total] = await Promise.all([
        pipelines.find(query).sort({ nameKey: 1 }).skip(skip).limit(limit).toArray(),
        countOf(query),
      ]);
      return { items, total };
    },
    async updateActive(organizationId, id, changes, version) {
      return pipelines
        .findOneAndUpdate(
          { _id: id, organizationId, archivedAt: null, ...atVersion(version) },
          { $set: { ...changes, version: version + 1 } },
          { returnDocument: "after" },
        )
        .catch((err) => translate(err, organizationId, changes.nameKey, changes.slug, id));
    },
    setArchived(organizationId, id, archivedAt, now, version) {
      const current = archivedAt ? { archivedAt: null } : { archivedAt: { $ne: null } };
      return pipelines.findOneAndUpdate(
        { _id: id, organizationId, ...current, ...atVersion(version) },
        { $set: { archivedAt, archiveState: archiveStateOf(archivedAt), updatedAt: now, version: version + 1 } },
        { returnDocument: "after" },
      );
    },
    async delete(organizationId, id) {
      const res = await pipelines.deleteOne({ _id: id, organizationId });
      return res.deletedCount === 1;
    },
  };
}

/**
 * Fills in the webhook token hash of pipelines stored before it existed, so that their webhook URLs find them. A
 * no-op once every pipeline has one; replicas starting together write the same value.
 */
async function hashWebhookTokens(pipelines: Collection<PipelineDoc>): Promise<void> {
  const missing = pipelines.find(
    { "provider.webhookTokenHash": { $exists: false } },
    { projection: { _id: 1, "provider.webhookToken": 1 } },
  );
  for await (const doc of missing) {
    const token = doc.provider?.webhookToken ?? "";
    if (token === "") continue;
    await pipelines.updateOne({ _id: doc._id }, { $set: { "provider.webhookTokenHash": webhookTokenHash(token) } });
  }
}

/**
 * Fills in the archiveState of pipelines stored before it existed, from their archivedAt: idempotent (only
 * documents without one are written), and replicas starting together write the same values.
 */
async function fillArchiveStates(pipelines: Collection<PipelineDoc>): Promise<void> {
  await pipelines.updateMany(
    { archiveState: { $exists: false }, archivedAt: null },
    { $set: { archiveState: "active" } },
  );
  await pipelines.updateMany(
    { archiveState: { $exists: false }, archivedAt: { $ne: null } },
    { $set: { archiveState: "archived" } },
  );
}

/**
 * Drops an index an earlier version made that nothing reads by ("org_archive_name_order", on archivedAt, which
 * archiveState replaced). Replicas starting together may each drop it: the second is told it is gone (IndexNotFound,
 * code 27), which is what it wanted; any other error is a real failure.
 */
async function dropRetiredIndex(pipelines: Collection<PipelineDoc>, name: string): Promise<void> {
  const existing = (await pipelines.listIndexes().toArray()).map((index) => String(index.name));
  if (!existing.includes(name)) return;
  await pipelines.dropIndex(name).catch((err: unknown) => {
    if ((err as { code?: number }).code !== 27) throw err;
  });
}

/** The filter of a pipeline at `version` (0: also one stored before versions existed, which has none). */
function atVersion(version: number) {
  return version === 0 ? { $or: [{ version: 0 }, { version: { $exists: false } }] } : { version };
}

/** Which unique index a duplicate key error came from, when the server says so. */
function duplicateField(err: unknown): "name" | "slug" | undefined {
  if (err instanceof MongoServerError && err.keyPattern) return "nameKey" in err.keyPattern ? "name" : "slug";
  const message = err instanceof Error ? err.message : "";
  if (/org_name_unique/.test(message)) return "name";
  if (/org_slug_unique/.test(message)) return "slug";
  return undefined;
}
