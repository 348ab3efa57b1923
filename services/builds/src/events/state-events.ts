/**
 * The builds service's state-change events (build_created, build_state_changed, build_finished, job_state_changed)
 * go through the outbox as marked writes (the runtime's marked-events.ts, on outbox.ts), so that a process that dies
 * between a write and its publish loses no event (notifications, statuses and webhooks depend on them:
 * docs/notifications.md#at-least-once-from-the-write-on). Each write adds its mark to the build's or job's
 * `eventMarks`; the relay (every process, OUTBOX_RELAY_MS) publishes an entry left behind once the mark is there.
 *
 * Cost: one upsert before the write (one bulk command for a creation's events), the mark inside the write itself,
 * and one delete after the publish that nobody waits for.
 */
import { BuildChangedSchema, JobStateChangedSchema, PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import {
  type EventPublisher,
  encodeEvent,
  markedEventKey,
  markedEventResolver,
  newId,
  type Outbox,
  type OutboxEvent,
  type OutboxResolver,
  publishThroughEvents as publishDecoded,
  type RawPublish,
  SUBJECTS,
  withMark,
  writeMarked,
} from "@conveyor/runtime";
import type { Build } from "../domain/build.js";
import type { Job } from "../domain/job.js";
import { buildMessage, jobMessage } from "../rpc/build-message.js";
import type { BuildRepository, BuildUpdate, JobUpdate } from "../store/build-repository.js";

/** The outbox key of a job's event: the job and the mark of its write. */
export const jobEventKey = (jobId: string, mark: string) => markedEventKey("job-event", jobId, mark);
/** The outbox key of a build's event: the build, the mark of its write, and the event's place in it. */
export const buildEventKey = (buildId: string, mark: string, index: number) =>
  markedEventKey("build-event", buildId, mark, index);

/** The event of a job's change. */
export function jobEvent(job: Job, previousState: string): OutboxEvent {
  return encodeEvent(SUBJECTS.builds.jobStateChanged, JobStateChangedSchema, {
    job: jobMessage(job),
    previousState,
    organizationId: job.organizationId,
    pipelineId: job.pipelineId,
    buildNumber: job.buildNumber,
  });
}

/** The event of a build's change under `subject`. */
export function buildEvent(subject: string, build: Build, previousState: string): OutboxEvent {
  return encodeEvent(subject, BuildChangedSchema, { build: buildMessage(build), previousState });
}

/** The build subjects a change from `before` to `after` is announced under (state changed, then finished). */
export function buildChangeSubjects(before: Build, after: Build): string[] {
  return [
    ...(after.state !== before.state ? [SUBJECTS.builds.buildStateChanged] : []),
    ...(after.finishedAt && !before.finishedAt ? [SUBJECTS.builds.buildFinished] : []),
  ];
}

/** The outbox resolvers of state events: publish the recorded event once its write is known to have committed. */
export function stateEventResolvers(
  repo: Pick<BuildRepository, "findJob" | "findBuildById">,
  now: () => Date,
): Record<string, OutboxResolver> {
  return {
    "job-event": markedEventResolver(async (id) => (await repo.findJob(id))?.eventMarks, now),
    "build-event": markedEventResolver(async (id) => (await repo.findBuildById(id))?.eventMarks, now),
  };
}

/**
 * Publishes a recorded event through the EventPublisher of a process without NATS (unit tests): the message is
 * decoded with its subject's schema and published as the service always did.
 */
export function publishThroughEvents(events: EventPublisher): RawPublish {
  return publishDecoded(
    events,
    {
      [SUBJECTS.builds.jobStateChanged]: JobStateChangedSchema,
      [SUBJECTS.builds.pipelineCountsChanged]: PipelineCountsChangedSchema,
    },
    BuildChangedSchema,
  );
}

/** Writes of builds and jobs whose events are made durable first; see the module doc. */
export interface StateEvents {
  /** A compare-and-set of a job from its state, announced: the job after, or null when it did not match. */
  changeJob(job: Job, update: JobUpdate, guard?: { agentId?: string; notRetried?: boolean }): Promise<Job | null>;
  /**
   * Several jobs' compare-and-sets, their events recorded in one command first; each job after (as this write left
   * it), or null where it did not match. Written in one command; with `stopAtMiss` one at a time, in order, and the
   * first that does not match ends the run (the rest are not tried: null).
   */
  changeJobs(
    changes: ReadonlyArray<{ job: Job; update: JobUpdate }>,
    opts?: { stopAtMiss?: boolean },
  ): Promise<Array<Job | null>>;
  /**
   * Single jobs' compare-and-sets as changeJob writes each (its marks trimmed, the agent guard), made together: their
   * events recorded in one command, written in one, published in one round. Each job after (the job given with its
   * update: the caller read it under its build's lock), or null where it did not match.
   */
  changeEach(changes: ReadonlyArray<{ job: Job; update: JobUpdate; agentId?: string }>): Promise<Array<Job | null>>;
  /** A compare-and-set of a build on its version, announced as buildChangeSubjects says: the build after, or null. */
  changeBuild(build: Build, update: BuildUpdate): Promise<Build | null>;
  /**
   * Records the events of a new document (a creation's build, announcing its jobs too; a retry's attempt) and gives
   * the document its mark: call `stored` once it is written, or `abandoned` when it was not.
   */
  announceNew(
    doc: { eventMarks?: string[] },
    key: (mark: string, index: number) => string,
    events: readonly OutboxEvent[],
  ): Promise<{ stored(): Promise<boolean>; abandoned(): Promise<void> }>;
}

/** Makes the state events' writes over the repository and the outbox (which must carry stateEventResolvers). */
export function createStateEvents(repo: BuildRepository, outbox: Outbox): StateEvents {
  /**
   * Independent compare-and-sets of jobs, written by a few statements: one mark for the write, appended to each job's,
   * their events recorded first in one command. Each job after, or null where it did not match.
   */
  const changeAll = async (
    changes: ReadonlyArray<{ job: Job; update: JobUpdate; agentId?: string }>,
    /** Each job's marks trimmed as a single write's (and stored as given), instead of the mark appended. */
    trimmed = false,
  ): Promise<Array<Job | null>> => {
    const mark = newId();
    // As updateJobs stores them: appended (the repository contract says why they stay few), or trimmed and set.
    const nexts = changes.map(({ job, update, agentId }) => {
      const marks = trimmed ? withMark(job.eventMarks, mark) : [...(job.eventMarks ?? []), mark];
      return { job, agentId, update: trimmed ? { ...update, eventMarks: marks } : update, marks };
    });
    const recorded = await outbox.recordAll(
      nexts.map(({ job, update, marks }) => ({
        key: jobEventKey(job.id, mark),
        event: jobEvent({ ...job, ...update, eventMarks: marks }, job.state),
      })),
    );
    const written = await repo.updateJobs(
      nexts.map(({ job, update, agentId }) => ({
        id: job.id,
        buildId: job.buildId,
        from: job.state,
        update,
        ...(agentId ? { agentId } : {}),
      })),
      mark,
    );
    await outbox.discardAll(recorded.filter((_, i) => !written[i]));
    await outbox.sendAll(recorded.filter((_, i) => written[i]));
    return nexts.map(({ job, update, marks }, i) => (written[i] ? { ...job, ...update, eventMarks: marks } : null));
  };

  return {
    changeJob: (job, update, guard) =>
      writeMarked(outbox, {
        marks: job.eventMarks,
        events: (mark, eventMarks) => [
          { key: jobEventKey(job.id, mark), event: jobEvent({ ...job, ...update, eventMarks }, job.state) },
        ],
        write: (eventMarks) => repo.updateJob(job.id, job.state, { ...update, eventMarks }, guard),
      }),
    async changeJobs(changes, opts = {}) {
      if (changes.length === 0) return [];
      // Without `stopAtMiss` the changes are independent (a cancel of thousands of jobs): one run. With it, runs of
      // consecutive changes of the same kind (state from and to, the same stamps), in order: a later run may rest on
      // an earlier one, and the first run with a miss ends the write. Changes of one run do not rest on each other
      // (a job goes ahead on its dependencies' finished states, and no run finishes what the same run moves on from).
      const runs = opts.stopAtMiss ? sameChangeRuns(changes) : [changes];
      const results: Array<Job | null> = [];
      let stopped = false;
      for (const run of runs) {
        if (stopped) {
          results.push(...run.map(() => null));
          continue;
        }
        const written = await changeAll(run);
        results.push(...written);
        if (written.some((job) => job === null)) stopped = true;
      }
      return results;
    },
    changeEach: (changes) => (changes.length === 0 ? Promise.resolve([]) : changeAll(changes, true)),
    changeBuild(build, update) {
      const next: Build = { ...build, ...update, version: build.version + 1 };
      return writeMarked(outbox, {
        marks: build.eventMarks,
        events: (mark, eventMarks) =>
          buildChangeSubjects(build, next).map((subject, i) => ({
            key: buildEventKey(build.id, mark, i),
            event: buildEvent(subject, { ...next, eventMarks }, build.state),
          })),
        write: (eventMarks) => repo.updateBuild(build.id, build.version, { ...update, eventMarks }),
      });
    },
    async announceNew(doc, key, events) {
      const mark = newId();
      // A new document has no earlier write: its marks are this one alone (a creation that tries again under
      // another number records its events again, and the first ones, unmarked, go).
      doc.eventMarks = [mark];
      const recorded = await outbox.recordAll(events.map((event, i) => ({ key: key(mark, i), event })));
      return { stored: () => outbox.sendAll(recorded), abandoned: () => outbox.discardAll(recorded) };
    },
  };
}

/** Consecutive changes of the same kind (from state, update), in order. */
export function sameChangeRuns<C extends { job: Pick<Job, "state">; update: JobUpdate }>(changes: readonly C[]): C[][] {
  const runs: C[][] = [];
  let last: string | undefined;
  for (const change of changes) {
    const key = JSON.stringify([change.job.state, change.update]);
    if (key === last) runs[runs.length - 1]?.push(change);
    else runs.push([change]);
    last = key;
  }
  return runs;
}
