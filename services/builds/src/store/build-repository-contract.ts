/**
 * What the builds service stores and asks of its database: the BuildRepository contract, the shapes of its updates,
 * and the versions a creation goes through. build-repository.ts is its MongoDB implementation.
 */

import type { Build } from "../domain/build.js";
import type { Job } from "../domain/job.js";
import type { JobState } from "../domain/types.js";
import type { BuildListFilter } from "./build-list-query.js";
import type { PipelineCounts } from "./pipeline-counts.js";

/** The fields of a build that a compare-and-set update may change. */
export type BuildUpdate = Partial<
  Pick<
    Build,
    | "state"
    | "blocked"
    | "cancelRequested"
    | "cancelReason"
    | "startedAt"
    | "finishedAt"
    | "metaData"
    | "commit"
    | "message"
    | "eventMarks"
    | "notifyUploads"
  >
>;

/** The fields of a job that a compare-and-set update may change. */
export type JobUpdate = Partial<
  Pick<
    Job,
    | "state"
    | "exitStatus"
    | "softFailed"
    | "agent"
    | "clusterQueueId"
    | "signal"
    | "signalReason"
    | "scheduledAt"
    | "runnableAt"
    | "assignedAt"
    | "startedAt"
    | "finishedAt"
    | "unblockedAt"
    | "timeoutInMinutes"
    | "retried"
    | "retriedInJobId"
    | "retryType"
    | "retriedBy"
    | "unblockedBy"
    | "deadlineAt"
    | "eventMarks"
    | "triggeredBuild"
    | "unblockFields"
    | "priority"
    | "name"
    | "label"
    | "stepUpdateIds"
    | "promisedExitStatus"
    | "promisedFailureReason"
  >
>;

/** The fields of a scheduled job dispatch matches an agent by (the agents service keeps them as its hints). */
export const DISPATCHABLE_JOB_FIELDS = [
  "organizationId",
  "clusterId",
  "agentQueryRules",
  "priority",
  "runnableAt",
] as const satisfies ReadonlyArray<keyof Job>;

/** What dispatch matches an agent by: a scheduled job's id and DISPATCHABLE_JOB_FIELDS. */
export type DispatchableJob = Pick<Job, "id" | (typeof DISPATCHABLE_JOB_FIELDS)[number]>;

/**
 * A build creation under way (build-creation.ts): stored before the build's jobs, removed once the build stands. A
 * claim left past the grace marks a creation cut off before its build was stored: its jobs are removed
 * (creation-repair.ts). At most one claim stands per build id.
 */
export interface CreationClaim {
  buildId: string;
  pipelineId: string;
  /** The ids of the jobs the creation stores: only these are removed with the claim. */
  jobIds: string[];
  createdAt: Date;
}

/** A claim stands for the build id already: another creation of the same build is under way, or was cut off. */
export class DuplicateClaimError extends Error {
  override name = "DuplicateClaimError";
  constructor(
    readonly buildId: string,
    options?: ErrorOptions,
  ) {
    super(`a creation of build ${buildId} is under way`, options);
  }
}

/** The unique (pipeline, number) index refused a build: another process took the number. */
export class DuplicateBuildNumberError extends Error {
  override name = "DuplicateBuildNumberError";
  constructor(
    readonly number: number,
    options?: ErrorOptions,
  ) {
    super(`build number ${number} is taken`, options);
  }
}

/** Unfinished jobs of one queue of an organization, by state. */
export interface QueueStateCount {
  queue: string;
  state: JobState;
  count: number;
}

/** Persistence of builds, jobs and per-pipeline build numbers. */
export interface BuildRepository {
  /**
   * Takes the next `count` build numbers of a pipeline (default 1) and returns the last: an atomic counter, so
   * numbers never repeat (gaps are possible).
   */
  nextNumber(pipelineId: string, count?: number): Promise<number>;
  /** Raises the counter to at least `number` (after another process took that number). */
  raiseNumber(pipelineId: string, number: number): Promise<void>;
  /** Inserts a build; a taken (pipeline, number) raises DuplicateBuildNumberError. */
  insertBuild(build: Build): Promise<void>;
  /** Stores a creation's claim; DuplicateClaimError when one stands for its build id. */
  insertClaim(claim: CreationClaim): Promise<void>;
  /** The claim standing for a build id, if any. */
  findClaim(buildId: string): Promise<CreationClaim | null>;
  /** Removes the claim of a build id (claims removed at the same time share one command). */
  removeClaim(buildId: string): Promise<void>;
  /** Claims stored before `before`, oldest first: creations cut off, or whose claim was not removed. */
  claimsBefore(before: Date, limit: number): Promise<CreationClaim[]>;
  /** Deletes jobs of a build by id, whatever their state (the jobs of a creation that never stored its build). */
  deleteJobs(buildId: string, ids: readonly string[]): Promise<void>;
  /** Up to `limit` ids of a pipeline's builds (any order): a deleted pipeline's builds are removed in batches. */
  buildIdsOfPipeline(pipelineId: string, limit: number): Promise<string[]>;
  /** Removes builds and their jobs, jobs first (a removal cut short is found again by its builds). */
  removeBuilds(buildIds: readonly string[]): Promise<void>;
  /** Forgets a deleted pipeline's build numbering. */
  forgetNumbering(pipelineId: string): Promise<void>;
  insertJobs(jobs: Job[]): Promise<void>;
  /** Inserts the jobs not stored yet (a replayed pipeline upload stores the rest of its jobs). */
  insertMissingJobs(jobs: Job[]): Promise<void>;
  /** Deletes a job that is still in `state`; false when it moved on. */
  deleteJob(id: string, state: JobState): Promise<boolean>;
  /** Adds dependencies to a job that has not been scheduled yet (pending or waiting); false when it was. */
  addDependencies(id: string, dependsOn: readonly string[]): Promise<boolean>;
  /** Moves jobs to new positions in their build's order. */
  setStepPositions(positions: ReadonlyArray<Pick<Job, "id" | "stepPosition">>): Promise<void>;
  findBuild(pipelineId: string, number: number): Promise<Build | null>;
  /** A build and its jobs, read at once (both by pipeline and number): one round trip for a build's answer. */
  findBuildWithJobs(pipelineId: string, number: number): Promise<{ build: Build; jobs: Job[] } | null>;
  findBuildById(id: string): Promise<Build | null>;
  listBuilds(filter: BuildListFilter, skip: number, limit: number): Promise<Build[]>;
  jobsOf(buildIds: readonly string[]): Promise<Job[]>;
  findJob(id: string): Promise<Job | null>;
  /** The jobs of `ids` that exist, in no particular order (at most a few hundred ids). */
  findJobs(ids: readonly string[]): Promise<Job[]>;
  /** Unfinished builds of a branch, for the skip/cancel intermediate rules. */
  unfinishedOnBranch(pipelineId: string, branch: string, beforeNumber: number): Promise<Build[]>;
  /** Updates a build only if its version is still `version`; returns the updated build or null. */
  updateBuild(id: string, version: number, update: BuildUpdate): Promise<Build | null>;
  /**
   * Compare-and-set on a job's state (and, with a guard, on its agent, or on its not being retried yet): the job
   * after the update, or null when it did not match.
   */
  updateJob(
    id: string,
    from: JobState,
    update: JobUpdate,
    guard?: { agentId?: string; notRetried?: boolean },
  ): Promise<Job | null>;
  /**
   * Many jobs' compare-and-sets on their states (a build's cancel, a reconcile's run of one change), each also given
   * the write's one `mark` (appended to its `eventMarks`): whether each was written. Appended, not trimmed to the
   * latest MAX_MARKS as a single write does (the bundled FerretDB ignores `$push`'s `$slice`): a job meets few such
   * writes, each moving it forward (one cancel, the reconcile's steps from pending to scheduled), and its next single
   * write trims them. An update that names its `eventMarks` (single jobs' transitions written together, each trimmed
   * as updateJob's and holding `mark`) stores them as given. A change with `agentId` matches only while the job is
   * held by that agent. Jobs with the same change are written by one statement, so that thousands of jobs cost a few
   * commands and transactions, not one each.
   */
  updateJobs(
    changes: ReadonlyArray<{ id: string; buildId: string; from: JobState; update: JobUpdate; agentId?: string }>,
    mark: string,
  ): Promise<boolean[]>;
  /**
   * Merges section header times into a job's while it is in one of `guard.states` and still holds `guard.held` of
   * them (compare-and-set), leaving it holding `guard.total`: the job after, or null when it did not match.
   */
  setHeaderTimes(
    id: string,
    times: Record<string, string>,
    guard: { states: readonly JobState[]; held: number; total: number },
  ): Promise<Job | null>;
  /**
   * Scheduled agent jobs, highest priority then longest runnable first: only what dispatch matches agents by (the
   * agents service reads up to a thousand of them every few seconds).
   */
  dispatchableJobs(limit: number): Promise<DispatchableJob[]>;
  /** Jobs in `state` whose `field` time is before `before`, oldest first (the sweepers' work). */
  jobsDue(state: JobState, field: "deadlineAt" | "runnableAt", before: Date, limit: number): Promise<Job[]>;
  /** An organization's jobs of a concurrency group in some states. */
  groupJobs(organizationId: string, group: string, states: readonly JobState[]): Promise<Job[]>;
  /** Concurrency groups with jobs waiting for a slot (`limited`), at most `limit` of them. */
  limitedGroups(limit: number): Promise<Array<{ organizationId: string; group: string }>>;
  /** Jobs of a type in some states (the trigger sweep's work). */
  jobsOfType(type: Job["type"], states: readonly JobState[], limit: number): Promise<Job[]>;
  /** Jobs assigned to an agent before `before` that it never accepted. */
  staleAssignments(before: Date, limit: number): Promise<Job[]>;
  /** Unfinished agent jobs of an organization, counted by queue and state. */
  countQueueJobs(organizationId: string, states: readonly JobState[], clusterId?: string): Promise<QueueStateCount[]>;
  /** Builds whose cancel was requested and that have not finished, at most `limit` (lifecycle/cancel-continuation.ts). */
  unfinishedCancels(limit: number): Promise<Build[]>;
  /** Pipelines with unfinished builds, or builds finished since `since`: those whose counters may be stale. */
  activePipelines(since: Date): Promise<string[]>;
  /** Live counters of a pipeline. */
  pipelineCounts(pipelineId: string): Promise<PipelineCounts>;
}

/** The version a new build is stored with (its first compare-and-set update makes it one more). */
export const FIRST_STATE_VERSION = 2;
