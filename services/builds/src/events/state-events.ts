/**
 * The builds service's state-change events (build_created, build_state_changed, build_finished, job_state_changed)
 * go through the outbox (the runtime's outbox.ts), so that a process that dies between a write and its publish
 * loses no event (notifications, statuses and webhooks depend on them: docs/notifications.md#delivery).
 *
 *   record the event(s) with a new mark → write, adding the mark to the document's `eventMarks` in the same write →
 *   publish each with msgID `<key>:<version>` → remove the entries (in the background)
 *
 * FerretDB has no transactions, so the event cannot be written in the same command as the change; the mark can. The
 * relay (every process, OUTBOX_RELAY_MS) resolves an entry left behind by reading its document: the mark there means
 * the write committed, and the recorded event is published (JetStream drops a repeat of the same msgID within its
 * duplicate window; consumers are idempotent beyond it); no mark after `UNCOMMITTED_AFTER_MS` means the write never
 * happened (a lost compare-and-set, a crash before it), and the entry goes. A document keeps its last `MAX_MARKS`
 * marks, far more than the writes that can happen between a crash and the relay's next pass.
 *
 * Cost: one upsert before the write (one bulk command for a creation's events), the mark inside the write itself,
 * and one delete after the publish that nobody waits for.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { BuildChangedSchema, JobStateChangedSchema, PipelineCountsChangedSchema } from "@conveyor/proto/builds";
import {
  type EventPublisher,
  encodeEvent,
  newId,
  type Outbox,
  type OutboxEntry,
  type OutboxEvent,
  type OutboxResolver,
  type RawPublish,
  type RecordedEvent,
  SUBJECTS,
} from "@conveyor/runtime";
import type { Build } from "../domain/build.js";
import type { Job } from "../domain/job.js";
import { buildMessage, jobMessage } from "../rpc/build-message.js";
import type { BuildRepository, BuildUpdate, JobUpdate } from "../store/build-repository.js";

/** How many write marks a build or job keeps (the latest last). */
export const MAX_MARKS = 8;
/** An entry whose mark is not on its document this long after it was recorded belongs to a write that never happened. */
export const UNCOMMITTED_AFTER_MS = 60_000;

/** The outbox key of a job's event: the job and the mark of its write. */
export const jobEventKey = (jobId: string, mark: string) => `job-event:${jobId}:${mark}`;
/** The outbox key of a build's event: the build, the mark of its write, and the event's place in it. */
export const buildEventKey = (buildId: string, mark: string, index: number) =>
  `build-event:${buildId}:${mark}:${index}`;

/** A document's marks after a write with `mark`: the latest MAX_MARKS. */
export const withMark = (marks: readonly string[] | undefined, mark: string): string[] => [
  ...(marks ?? []).slice(-(MAX_MARKS - 1)),
  mark,
];

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

/**
 * Whether an entry's write committed: "publish" when its document bears the mark, "drop" when it does not and the
 * entry is older than UNCOMMITTED_AFTER_MS (or the document is gone that long), "wait" otherwise.
 */
export function commitOf(marks: readonly string[] | undefined | null, mark: string, entryAt: Date, now: Date) {
  if (marks?.includes(mark)) return "publish" as const;
  return now.getTime() - entryAt.getTime() > UNCOMMITTED_AFTER_MS ? ("drop" as const) : ("wait" as const);
}

/** The entry's document id and write mark, from its key. */
const keyParts = (key: string): { id: string; mark: string } => {
  const [, id = "", mark = ""] = key.split(":");
  return { id, mark };
};

/** The outbox resolvers of state events: publish the recorded event once its write is known to have committed. */
export function stateEventResolvers(
  repo: Pick<BuildRepository, "findJob" | "findBuildById">,
  now: () => Date,
): Record<string, OutboxResolver> {
  const resolve = async (entry: OutboxEntry, marksOf: (id: string) => Promise<readonly string[] | null>) => {
    const { id, mark } = keyParts(entry.key);
    const verdict = commitOf(await marksOf(id), mark, entry.at, now());
    if (verdict === "publish") return entry.event ?? "drop";
    return verdict;
  };
  return {
    "job-event": (entry) => resolve(entry, async (id) => (await repo.findJob(id))?.eventMarks ?? null),
    "build-event": (entry) => resolve(entry, async (id) => (await repo.findBuildById(id))?.eventMarks ?? null),
  };
}

/**
 * Publishes a recorded event through the EventPublisher of a process without NATS (unit tests): the message is
 * decoded with its subject's schema and published as the service always did.
 */
export function publishThroughEvents(events: EventPublisher): RawPublish {
  return async (subject, data) => {
    if (subject === SUBJECTS.builds.jobStateChanged)
      return events.publish(subject, JobStateChangedSchema, fromBinary(JobStateChangedSchema, data));
    if (subject === SUBJECTS.builds.pipelineCountsChanged)
      return events.publish(subject, PipelineCountsChangedSchema, fromBinary(PipelineCountsChangedSchema, data));
    return events.publish(subject, BuildChangedSchema, fromBinary(BuildChangedSchema, data));
  };
}

/** Writes of builds and jobs whose events are made durable first; see the module doc. */
export interface StateEvents {
  /** A compare-and-set of a job from its state, announced: the job after, or null when it did not match. */
  changeJob(job: Job, update: JobUpdate, guard?: { agentId?: string; notRetried?: boolean }): Promise<Job | null>;
  /**
   * Several jobs' compare-and-sets, their events recorded in one command first; each job after, or null where it did
   * not match. With `stopAtMiss` the first that does not match ends the run (the rest are not tried: null).
   */
  changeJobs(
    changes: ReadonlyArray<{ job: Job; update: JobUpdate }>,
    opts?: { stopAtMiss?: boolean },
  ): Promise<Array<Job | null>>;
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
  const settle = async <T>(recorded: RecordedEvent[], written: T | null): Promise<T | null> => {
    if (!written) {
      await outbox.discardAll(recorded);
      return null;
    }
    await outbox.sendAll(recorded);
    return written;
  };
  return {
    async changeJob(job, update, guard) {
      const mark = newId();
      const next: Job = { ...job, ...update, eventMarks: withMark(job.eventMarks, mark) };
      const recorded = await outbox.recordAll([{ key: jobEventKey(job.id, mark), event: jobEvent(next, job.state) }]);
      return settle(
        recorded,
        await repo.updateJob(job.id, job.state, { ...update, eventMarks: next.eventMarks }, guard),
      );
    },
    async changeJobs(changes, opts = {}) {
      if (changes.length === 0) return [];
      const nexts = changes.map(({ job, update }) => {
        const mark = newId();
        return { mark, marks: withMark(job.eventMarks, mark), job, update };
      });
      const recorded = await outbox.recordAll(
        nexts.map(({ mark, marks, job, update }) => ({
          key: jobEventKey(job.id, mark),
          event: jobEvent({ ...job, ...update, eventMarks: marks }, job.state),
        })),
      );
      const results: Array<Job | null> = [];
      const sent: RecordedEvent[] = [];
      const dropped: RecordedEvent[] = [];
      let stopped = false;
      for (const [i, { marks, job, update }] of nexts.entries()) {
        const entry = recorded[i] as RecordedEvent;
        const written = stopped ? null : await repo.updateJob(job.id, job.state, { ...update, eventMarks: marks });
        results.push(written);
        (written ? sent : dropped).push(entry);
        if (!written && opts.stopAtMiss) stopped = true;
      }
      await outbox.discardAll(dropped);
      await outbox.sendAll(sent);
      return results;
    },
    async changeBuild(build, update) {
      const mark = newId();
      const next: Build = {
        ...build,
        ...update,
        version: build.version + 1,
        eventMarks: withMark(build.eventMarks, mark),
      };
      const recorded = await outbox.recordAll(
        buildChangeSubjects(build, next).map((subject, i) => ({
          key: buildEventKey(build.id, mark, i),
          event: buildEvent(subject, next, build.state),
        })),
      );
      return settle(
        recorded,
        await repo.updateBuild(build.id, build.version, { ...update, eventMarks: next.eventMarks }),
      );
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
