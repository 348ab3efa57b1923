import { FINISHED_BUILD_STATES, FINISHED_JOB_STATES } from "@conveyor/ci-rules";
import type { Build, Job } from "@conveyor/proto/builds";
import type { Logger } from "@conveyor/runtime";
import type { BuildEvents, BuildWatch } from "./build-events.js";
import { createLineCutter, type LineCutter, type LinesUpdate } from "./live-lines.js";
import { type ChunkNotice, createLogAssembler, type LogAssembler, type LogReader } from "./log-assembler.js";
import { formatCursors, type LogCursors } from "./log-cursors.js";
import type { LogFeeds, LogFeedWatch } from "./log-feeds.js";
import type { SseEvent } from "./sse-writer.js";

/** A job the page lists as a row, with the earlier attempts its retries replaced (pages/build-jobs.ts). */
export interface JobRow {
  job: Job;
  attempts: readonly Job[];
}

/** How the page shows what changes: the same markup the build page renders, for this person. */
export interface LiveRender {
  /** The rows of a build's jobs, in the page's order. */
  rows(jobs: readonly Job[]): JobRow[];
  /** One row's HTML (its element's id is the job's). */
  row(row: JobRow): string;
  /** The whole list of rows. */
  list(jobs: readonly Job[]): string;
  /** The build's state as its page's header shows it. */
  state(build: Build): string;
}

export interface LiveStreamDeps {
  feeds: LogFeeds;
  events: BuildEvents;
  /** Reads a job's stored log from an offset (StreamJobLog with from_offset). */
  readLog(jobId: string): LogReader;
  /** The build with every job (retried attempts included), as it is now. */
  readBuild(): Promise<Build>;
  render: LiveRender;
  logger: Pick<Logger, "warn">;
  /** The assembler's pause before reading a gap (log-assembler.ts); tests shorten it. */
  gapWaitMs?: number;
}

export interface LiveStreamOptions {
  buildId: string;
  /** The logs to follow and where the page has each up to. */
  cursors: LogCursors;
  send(event: SseEvent): void;
  /** Resolves when the client has room for more (sse-writer.ts): reads of stored logs wait for it. */
  room(): Promise<void>;
  /** Ends the stream: the build finished and everything was sent. */
  end(): void;
}

/** A live stream under way. */
export interface LiveStream {
  /** Resolves once the stream sent the build as it is (its first events). */
  started: Promise<void>;
  /** Stops everything the stream holds (the client left). */
  stop(): void;
}

const finishedJob = (state: string) => (FINISHED_JOB_STATES as readonly string[]).includes(state);
const finishedBuild = (state: string) => (FINISHED_BUILD_STATES as readonly string[]).includes(state);

/** One followed log: its assembler, its lines, its feed. */
interface Follower {
  jobId: string;
  assembler: LogAssembler;
  cutter: LineCutter;
  watch: LogFeedWatch;
  /** Set once the job finished: its last bytes are read and sent, then it is unfollowed. */
  finishing?: Promise<void>;
}

/**
 * One build page's live stream (docs/pages.md#live-updates). It listens first (the build's events, each followed
 * log's chunk notices), then reads the build and sends it whole (its state and the list of its jobs: whatever
 * changed while the page was away is shown), then what changes: a job's row, the list when rows come or go (a
 * retry), the build's state, and the new lines of each followed log from where the page had it. When a followed
 * job finishes, the rest of its log is read and sent; when the build finishes, once every followed log is complete,
 * an `end` event closes the stream.
 */
export function startLiveStream(deps: LiveStreamDeps, opts: LiveStreamOptions): LiveStream {
  /** Where the page is in each followed log: the id of every log event (log-cursors.ts). */
  const cursors: LogCursors = new Map();
  const followers = new Map<string, Follower>();
  const jobs = new Map<string, Job>();
  let build: Build | undefined;
  let rowIds = "";
  let stopped = false;
  let ending = false;
  /** Events heard before the build was read, applied after it in the order heard. */
  let early: Array<() => void> | undefined = [];

  const send = (event: SseEvent) => {
    if (!stopped) opts.send(event);
  };
  const json = (value: unknown) => JSON.stringify(value);

  const sendLines = (jobId: string, update: LinesUpdate) => {
    cursors.set(jobId, update.resumeAt);
    send({
      event: "log",
      id: formatCursors(cursors),
      data: json({ job: jobId, from: update.from, html: update.html }),
    });
  };

  /** Follows a job's log from `from`: its notices from now on, and what is stored once catchUp reads it. */
  const follow = (jobId: string, from: number) => {
    const watch = deps.feeds.watch(jobId, {
      notice: (notice: ChunkNotice) => followers.get(jobId)?.assembler.push(notice),
      broke: () => void followers.get(jobId)?.assembler.catchUp(),
    });
    const cutter = createLineCutter(from, (at, bytes) => watch.render(at, bytes));
    const assembler = createLogAssembler({
      from,
      read: deps.readLog(jobId),
      room: opts.room,
      ...(deps.gapWaitMs === undefined ? {} : { gapWaitMs: deps.gapWaitMs }),
      emit(offset, bytes) {
        const update = cutter.push(offset, bytes);
        if (update) sendLines(jobId, update);
      },
      onReadError: (err) => deps.logger.warn({ err, jobId }, "live log read failed; reading again later"),
    });
    cursors.set(jobId, from);
    followers.set(jobId, { jobId, assembler, cutter, watch });
  };
  const unfollow = (f: Follower) => {
    f.assembler.close();
    f.watch.stop();
  };
  /** Reads a log's last bytes once its job finished, completes its last line, and stops following it. */
  const finishLog = (f: Follower): Promise<void> =>
    (f.finishing ??= (async () => {
      await f.assembler.catchUp();
      const update = f.cutter.finish();
      if (update) sendLines(f.jobId, update);
      unfollow(f);
    })());

  const sendBuild = (b: Build) =>
    send({ event: "build", data: json({ state: b.state, blocked: b.blocked, html: deps.render.state(b) }) });

  /** Sends the row the changed job is shown in, or the whole list when the rows themselves changed. */
  const sendRows = (changed?: string) => {
    const all = [...jobs.values()];
    const rows = deps.render.rows(all);
    const ids = rows.map((r) => r.job.id).join(",");
    if (changed === undefined || ids !== rowIds) {
      rowIds = ids;
      send({ event: "jobs", data: json({ html: deps.render.list(all) }) });
      return;
    }
    const row = rows.find((r) => r.job.id === changed || r.attempts.some((a) => a.id === changed));
    if (row) send({ event: "job", data: json({ id: row.job.id, state: row.job.state, html: deps.render.row(row) }) });
  };

  /** Once the build finished and every followed log is complete: the end. */
  const endWhenDone = async () => {
    if (ending || early || !build || !finishedBuild(build.state)) return;
    ending = true;
    await Promise.all([...followers.values()].map(finishLog));
    if (stopped) return;
    send({ event: "end", data: json({ state: build.state }) });
    stop();
    opts.end();
  };

  const applyJob = (job: Job) => {
    jobs.set(job.id, job);
    sendRows(job.id);
    const follower = followers.get(job.id);
    if (follower && finishedJob(job.state)) void finishLog(follower);
  };

  const applyBuild = (next: Build) => {
    // Events of one build may cross (two replicas publishing): an older version changes nothing.
    if (build && next.version < build.version) return;
    build = next;
    sendBuild(next);
    void endWhenDone();
  };

  /** Reads the build and sends it whole: at the start, and after the events' subscription broke. */
  const load = async () => {
    const read = await deps.readBuild();
    if (stopped) return;
    jobs.clear();
    for (const job of read.jobs) jobs.set(job.id, job);
    build = undefined;
    applyBuild(read);
    sendRows();
    for (const follower of followers.values()) {
      if (finishedJob(jobs.get(follower.jobId)?.state ?? "")) void finishLog(follower);
    }
  };

  const buildWatch: BuildWatch = deps.events.watch(opts.buildId, {
    job(job) {
      if (early) early.push(() => applyJob(job));
      else applyJob(job);
    },
    build(next) {
      if (early) early.push(() => applyBuild(next));
      else applyBuild(next);
    },
    broke() {
      if (early) return;
      load().catch((err: unknown) => deps.logger.warn({ err, buildId: opts.buildId }, "live build read failed"));
    },
  });

  const stop = () => {
    if (stopped) return;
    stopped = true;
    buildWatch.stop();
    for (const follower of followers.values()) unfollow(follower);
  };

  const started = (async () => {
    await buildWatch.ready;
    await load();
    if (stopped) return;
    // Only the logs of this build's jobs: a page names them, and must not read another build's through its own.
    for (const [jobId, from] of opts.cursors) if (jobs.has(jobId)) follow(jobId, from);
    // Subscribed before reading: nothing stored from here on is missed.
    await Promise.all([...followers.values()].map((f) => f.watch.ready));
    const heard = early ?? [];
    early = undefined;
    for (const apply of heard) apply();
    for (const follower of followers.values()) {
      if (finishedJob(jobs.get(follower.jobId)?.state ?? "")) void finishLog(follower);
      else void follower.assembler.catchUp();
    }
    void endWhenDone();
  })();

  return { started, stop };
}
