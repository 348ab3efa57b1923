import { gzipSync } from "node:zlib";
import { create, type DescMessage, toBinary } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { createMemoryBuildsService } from "@conveyor/builds/testing";
import {
  BuildChangedSchema,
  BuildsService,
  JobEventType,
  JobLogChunkStoredSchema,
  JobStateChangedSchema,
} from "@conveyor/proto/builds";
import { createLogger, jobLogSubject, SUBJECTS } from "@conveyor/runtime";
import { createFakeNats, waitFor } from "@conveyor/runtime/testing";
import { openLog } from "../log/log-reader.js";
import { createLiveHub, LIVE_PACE } from "./live-hub.js";
import { type LiveRender, startLiveStream } from "./live-stream.js";
import { parseCursors } from "./log-cursors.js";
import type { SseEvent } from "./sse-writer.js";

const logger = createLogger("test", "silent");

/**
 * The builds service in memory announcing its events and log chunks on a fake NATS, as the real one does on
 * nats-server, and a live hub on that NATS: what one gateway's live streams hear.
 */
function world() {
  const nats = createFakeNats();
  const memory = createMemoryBuildsService({
    logNotices: {
      // As log-chunk-notices.ts publishes them (with their gzip bytes).
      stored: (chunk) =>
        nats.publish(
          jobLogSubject(chunk.jobId),
          toBinary(
            JobLogChunkStoredSchema,
            create(JobLogChunkStoredSchema, { ...chunk, offset: BigInt(chunk.offset) }),
          ),
        ),
    },
  });
  const bridge = <D extends DescMessage>(subject: string, schema: D) =>
    memory.events.subscribe(subject, schema, (event) => nats.publish(subject, toBinary(schema, event)));
  bridge(SUBJECTS.builds.jobStateChanged, JobStateChangedSchema);
  bridge(SUBJECTS.builds.buildStateChanged, BuildChangedSchema);
  bridge(SUBJECTS.builds.buildFinished, BuildChangedSchema);
  const client = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, memory.service)),
  );
  const hub = createLiveHub({ nc: nats.nc, logger, settings: { ...LIVE_PACE, gapWaitMs: 5, perPerson: 5, total: 10 } });
  return { nats, memory, client, hub };
}

type World = ReturnType<typeof world>;

/** Rows rendered as a test can read them: each job's id and state. */
const render: LiveRender = {
  rows: (jobs) =>
    [...jobs]
      .filter((j) => !j.retried)
      .map((job) => ({ job, attempts: jobs.filter((a) => a.retriedInJobId === job.id) })),
  row: (row) => `<li id="${row.job.id}">${row.job.state}</li>`,
  list: (jobs) => jobs.map((j) => `${j.id}=${j.state}`).join(" "),
  state: (build) => build.state,
};

/** A page's live stream on `w`, recording what it sends. */
function open(w: World, build: { id: string; pipelineId: string; number: number }, logs: string) {
  const events: SseEvent[] = [];
  let ended = false;
  const stream = startLiveStream(
    {
      feeds: w.hub.feeds,
      events: w.hub.events,
      readLog: (jobId) =>
        async function* (from, signal) {
          const ref = { pipelineId: build.pipelineId, number: build.number, jobId };
          const { pieces } = await openLog(
            (req, o) => w.client.streamJobLog(req, o),
            ref,
            { fromOffset: from },
            signal,
          );
          yield* pieces;
        },
      readBuild: async () => {
        const { build: read } = await w.client.getBuild({
          pipelineId: build.pipelineId,
          number: build.number,
          includeRetriedJobs: true,
        });
        if (!read) throw new Error("no build");
        return read;
      },
      render,
      logger,
      gapWaitMs: 5,
    },
    {
      buildId: build.id,
      cursors: parseCursors(logs) ?? new Map(),
      send: (event) => events.push(event),
      room: async () => {},
      end: () => {
        ended = true;
      },
    },
  );
  return { stream, events, ended: () => ended };
}

/** The log lines a page shows after applying the events as the client does: by anchor, the last one kept. */
function shownLines(events: readonly SseEvent[], jobId: string): string[] {
  const lines = new Map<number, string>();
  for (const e of events) {
    if (e.event !== "log") continue;
    const data = JSON.parse(e.data) as { job: string; from: number; html: string };
    if (data.job !== jobId) continue;
    for (const m of data.html.matchAll(/<span class="l(?: h)?" id="L(\d+)">.*?<span class="t">(.*?)<\/span><\/span>/g))
      lines.set(Number(m[1]), m[2] as string);
  }
  return [...lines].sort((a, b) => a[0] - b[0]).map(([, text]) => text);
}

/** A running job of a new build: its build and the job. */
async function runningJob(w: World) {
  const { build, jobs } = await w.memory.seedBuild();
  const job = jobs[0];
  if (!job) throw new Error("no job");
  await w.client.assignJob({ jobId: job.id, agent: { id: "agent-1", name: "one" } });
  await w.client.acceptJob({ jobId: job.id, agentId: "agent-1" });
  await w.client.transitionJob({ jobId: job.id, event: JobEventType.START });
  return { build, job };
}

/** The log of `lines` lines split into chunks of about `size` bytes, with their offsets. */
function chunksOf(log: string, size: number) {
  const bytes = Buffer.from(log);
  const out = [];
  for (let offset = 0, sequence = 1; offset < bytes.length; offset += size, sequence++) {
    const piece = bytes.subarray(offset, offset + size);
    out.push({ sequence, offset, piece });
  }
  return out;
}

const append = (w: World, jobId: string, c: { sequence: number; offset: number; piece: Buffer }) =>
  w.client.appendJobLog({
    jobId,
    sequence: c.sequence,
    offset: BigInt(c.offset),
    size: c.piece.length,
    data: gzipSync(c.piece),
  });

describe("a live build page's stream", () => {
  it("sends the build and its jobs, then each log byte once as lines, out-of-order chunks included, then the end", async () => {
    const w = world();
    const { build, job } = await runningJob(w);
    const log = `${Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join("\n")}\n`;
    const chunks = chunksOf(log, 23);
    // The first chunks are stored before the page opens: it reads them.
    await append(w, job.id, chunks[0] as (typeof chunks)[number]);
    const page = open(w, build, `${job.id}:0`);
    await page.stream.started;
    expect(page.events.slice(0, 2).map((e) => e.event)).toEqual(["build", "jobs"]);
    expect(JSON.parse((page.events[1] as SseEvent).data).html).toContain(`${job.id}=running`);
    // Then three at a time in flight, each trio stored in reverse, one sent twice.
    const rest = chunks.slice(1);
    for (let i = 0; i < rest.length; i += 3) {
      const trio = rest.slice(i, i + 3).reverse();
      for (const c of trio) await append(w, job.id, c);
      await append(w, job.id, trio[0] as (typeof chunks)[number]);
    }
    await waitFor(() => shownLines(page.events, job.id).length === 40);
    await w.client.transitionJob({ jobId: job.id, event: JobEventType.FINISH, exitStatus: 0 });
    await waitFor(() => page.ended());
    expect(shownLines(page.events, job.id)).toEqual(log.trimEnd().split("\n"));
    const last = page.events.filter((e) => e.event === "log").at(-1);
    expect(last?.id).toBe(`${job.id}:${Buffer.byteLength(log)}`);
    expect(page.events.some((e) => e.event === "job" && JSON.parse(e.data).state === "passed")).toBe(true);
    expect(page.events.at(-1)).toEqual({ event: "end", data: JSON.stringify({ state: "passed" }) });
    // Nothing is left subscribed.
    expect(w.hub.feeds.stats()).toMatchObject({ jobs: 0, listeners: 0 });
    expect(w.hub.events.watched()).toBe(0);
  });

  it("resumes from a Last-Event-ID position: nothing before it again, nothing after it lost", async () => {
    const w = world();
    const { build, job } = await runningJob(w);
    const first = "one\ntwo\nthr";
    const more = "ee\nfour\n";
    await append(w, job.id, { sequence: 1, offset: 0, piece: Buffer.from(first) });
    const before = open(w, build, `${job.id}:0`);
    await waitFor(() => shownLines(before.events, job.id).length === 3);
    const resumeId = before.events.filter((e) => e.event === "log").at(-1)?.id ?? "";
    // The page had "one" and "two" complete and "thr" unfinished: it resumes at the unfinished line.
    expect(resumeId).toBe(`${job.id}:8`);
    before.stream.stop();
    await append(w, job.id, { sequence: 2, offset: first.length, piece: Buffer.from(more) });
    const after = open(w, build, resumeId);
    await waitFor(() => shownLines(after.events, job.id).length === 2);
    expect(shownLines(after.events, job.id)).toEqual(["three", "four"]);
    after.stream.stop();
  });

  it("fills a chunk whose notice never came by reading it, once a later one shows the gap", async () => {
    const w = world();
    const { build, job } = await runningJob(w);
    const page = open(w, build, `${job.id}:0`);
    await page.stream.started;
    // Stored behind the service's back: no notice.
    await w.memory.repos.logs.insertChunk({
      jobId: job.id,
      sequence: 1,
      offset: 0,
      size: 2,
      sha256: "",
      gzip: gzipSync("a\n"),
    });
    await append(w, job.id, { sequence: 2, offset: 2, piece: Buffer.from("b\n") });
    await waitFor(() => shownLines(page.events, job.id).length === 2);
    expect(shownLines(page.events, job.id)).toEqual(["a", "b"]);
    page.stream.stop();
  });

  it("subscribes once per watched job however many pages watch it, and unsubscribes when the last one leaves", async () => {
    const w = world();
    const { build, job } = await runningJob(w);
    const pages = [open(w, build, `${job.id}:0`), open(w, build, `${job.id}:0`), open(w, build, "")];
    await Promise.all(pages.map((p) => p.stream.started));
    expect(w.nats.opened(jobLogSubject(job.id))).toBe(1);
    expect(w.nats.opened(SUBJECTS.builds.jobStateChanged)).toBe(1);
    expect(w.hub.feeds.stats()).toMatchObject({ jobs: 1, listeners: 2 });
    await append(w, job.id, { sequence: 1, offset: 0, piece: Buffer.from("shared\n") });
    for (const p of pages.slice(0, 2)) await waitFor(() => shownLines(p.events, job.id).length === 1);
    // The same lines from the same place were rendered once for both pages.
    const [a, b] = pages.map((p) => p.events.find((e) => e.event === "log")?.data);
    expect(a).toBe(b);
    for (const p of pages) p.stream.stop();
    expect(w.hub.feeds.stats()).toMatchObject({ jobs: 0, listeners: 0 });
    expect(w.hub.events.watched()).toBe(0);
    // A new page subscribes again.
    const again = open(w, build, `${job.id}:0`);
    await again.stream.started;
    expect(w.nats.opened(jobLogSubject(job.id))).toBe(2);
    again.stream.stop();
  });

  it("follows only logs of the build's own jobs", async () => {
    const w = world();
    const { build } = await runningJob(w);
    const other = await runningJob(w);
    await append(w, other.job.id, { sequence: 1, offset: 0, piece: Buffer.from("secret\n") });
    const page = open(w, build, `${other.job.id}:0`);
    await page.stream.started;
    await append(w, other.job.id, { sequence: 2, offset: 7, piece: Buffer.from("more secret\n") });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(page.events.filter((e) => e.event === "log")).toEqual([]);
    expect(w.nats.opened(jobLogSubject(other.job.id))).toBe(0);
    page.stream.stop();
  });

  it("reads the build again when the events' subscription broke, and shows the state it missed", async () => {
    const w = world();
    const { build, job } = await runningJob(w);
    const page = open(w, build, "");
    await page.stream.started;
    w.nats.fail(SUBJECTS.builds.jobStateChanged);
    await waitFor(() => page.events.filter((e) => e.event === "jobs").length === 2);
    expect(JSON.parse(page.events.filter((e) => e.event === "jobs").at(-1)?.data ?? "{}").html).toContain(
      `${job.id}=running`,
    );
    page.stream.stop();
  });
});
