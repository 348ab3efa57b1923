/**
 * How a build list is asked of the database: the filter and sort of one list, and for lists across several
 * organizations or pipelines, one query per scope merged in memory. Pure; the repository runs the queries.
 */
import type { Filter } from "mongodb";
import type { BuildState } from "../domain/types.js";

export interface BuildListFilter {
  /** Builds of every pipeline of these organizations… */
  organizationIds: readonly string[];
  /** …and of these pipelines (for callers who may see only some pipelines of an organization). */
  pipelineIds?: readonly string[];
  pipelineId?: string;
  branches?: readonly string[];
  commits?: readonly string[];
  createdFrom?: Date;
  createdTo?: Date;
  creatorId?: string;
  finishedFrom?: Date;
  metaPairs?: readonly string[];
  states?: readonly BuildState[];
}

/** The stored fields a build list filters and sorts on. */
export interface ListedBuildFields {
  _id: string;
  organizationId: string;
  pipelineId: string;
  number: number;
  state: BuildState;
  blocked: boolean;
  branch: string;
  commit: string;
  "creator.id"?: string;
  metaPairs: string[];
  createdAt: Date;
  finishedAt: Date | null;
}

/**
 * The filter and sort of a build list: a pipeline's builds by number, others newest first. Every combination is
 * served by one of the indexes createMongoBuildRepository makes (build-repository.int.test.ts checks the plans).
 */
export function buildListQuery(f: BuildListFilter): {
  filter: Filter<ListedBuildFields>;
  sort: Record<string, 1 | -1>;
} {
  const scope: Filter<ListedBuildFields>[] = [];
  if (f.organizationIds.length > 0) scope.push({ organizationId: { $in: [...f.organizationIds] } });
  if (f.pipelineIds?.length) scope.push({ pipelineId: { $in: [...f.pipelineIds] } });
  const q: Filter<ListedBuildFields> = scope.length === 1 ? { ...scope[0] } : { $or: scope };
  if (f.pipelineId) q.pipelineId = f.pipelineId;
  if (f.branches?.length) q.branch = { $in: [...f.branches] };
  if (f.commits?.length) q.commit = { $in: [...f.commits] };
  if (f.states?.length) {
    // A build waiting at a block step is stored with the state it shows (its blocked_state) and blocked: true;
    // the "blocked" filter means those, and the other states mean builds that are not blocked.
    const plain = f.states.filter((st) => st !== "blocked");
    const byState = { state: { $in: plain }, blocked: false };
    if (f.states.includes("blocked")) {
      const either = plain.length > 0 ? [byState, { blocked: true }] : [{ blocked: true }];
      q.$and = [...(q.$and ?? []), { $or: either }];
    } else Object.assign(q, byState);
  }
  if (f.creatorId) q["creator.id"] = f.creatorId;
  if (f.metaPairs?.length) q.metaPairs = { $all: [...f.metaPairs] };
  if (f.createdFrom || f.createdTo) {
    q.createdAt = { ...(f.createdFrom ? { $gte: f.createdFrom } : {}), ...(f.createdTo ? { $lt: f.createdTo } : {}) };
  }
  if (f.finishedFrom) q.finishedAt = { $gte: f.finishedFrom };
  const sort: Record<string, 1 | -1> = f.pipelineId ? { number: -1 } : { createdAt: -1, _id: -1 };
  return { filter: q, sort };
}

/** Above this many organizations and pipelines a list is one query (sorted in full) rather than one per scope. */
const MAX_SPLIT_SCOPES = 32;

/**
 * The queries of one build list. A list across several organizations or pipelines (a user's `/v2/builds`, or the
 * pipelines a team member may read) is one query per organization and per pipeline, because an index gives one
 * organization's or one pipeline's builds newest first, while a single `$in` query must sort every match.
 * mergeBuildPages puts them together.
 */
export function splitBuildList(f: BuildListFilter): BuildListFilter[] {
  if (f.pipelineId) return [f];
  const scopes: BuildListFilter[] = [
    ...f.organizationIds.map((id) => ({ ...f, organizationIds: [id], pipelineIds: [] })),
    ...(f.pipelineIds ?? []).map((id) => ({ ...f, organizationIds: [], pipelineIds: [id] })),
  ];
  return scopes.length <= 1 || scopes.length > MAX_SPLIT_SCOPES ? [f] : scopes;
}

/**
 * One page (skip, limit) of the builds of several lists, each already newest first and holding at least its own
 * first skip + limit builds: newest first by createdAt then _id (the lists' own order), a build once.
 */
export function mergeBuildPages<T extends { _id: string; createdAt: Date }>(
  pages: readonly (readonly T[])[],
  skip: number,
  limit: number,
): T[] {
  const seen = new Set<string>();
  const all: T[] = [];
  for (const page of pages) {
    for (const build of page) {
      if (seen.has(build._id)) continue;
      seen.add(build._id);
      all.push(build);
    }
  }
  all.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a._id < b._id ? 1 : a._id > b._id ? -1 : 0));
  return all.slice(skip, skip + limit);
}
