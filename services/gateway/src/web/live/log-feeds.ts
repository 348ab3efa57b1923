import { gunzipSync } from "node:zlib";
import { fromBinary } from "@bufbuild/protobuf";
import { JobLogChunkStoredSchema } from "@conveyor/proto/builds";
import { jobLogSubject, type Logger, superviseLoop } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ChunkNotice } from "./log-assembler.js";

/** What a live stream hears of one job's log. */
export interface LogFeedListener {
  /** A chunk the builds service stored. */
  notice(notice: ChunkNotice): void;
  /** The subscription broke and was made again: notices may have been missed meanwhile (read the log). */
  broke(): void;
}

/** A listener's place on a job's feed. */
export interface LogFeedWatch {
  /** Resolves once NATS has the subscription: a read of the log started after it misses no later notice. */
  ready: Promise<void>;
  /** The same bytes from the same offset render the same lines: readers at one place share the work. */
  render(from: number, bytes: Uint8Array): string;
  stop(): void;
}

export interface LogFeedStats {
  /** Jobs this gateway subscribes to (one NATS subscription each). */
  jobs: number;
  listeners: number;
  notices: number;
}

/** The live feeds of job logs on one gateway: one NATS subscription per watched job, fanned out in memory. */
export interface LogFeeds {
  watch(jobId: string, listener: LogFeedListener): LogFeedWatch;
  stats(): LogFeedStats;
}

/** How many renderings of a job's newest lines are kept for readers at the same place. */
const RENDERINGS_KEPT = 8;

interface Feed {
  listeners: Set<LogFeedListener>;
  stop(): Promise<void>;
  ready: Promise<void>;
  renderings: Map<string, string>;
}

/**
 * Subscribes to a job's chunk notices (jobLogSubject) while at least one stream of this gateway watches the job, and
 * unsubscribes when the last one stops: every gateway subscribes only to what its own open pages show. Each
 * subscription is a supervised loop: an undecodable notice is logged and counted, and a subscription that breaks is
 * made again, its listeners told to read what they may have missed. A notice's gzip bytes are decompressed once
 * here for every listener; a notice whose bytes do not decompress to its size is passed on without them (read).
 */
export function createLogFeeds(opts: {
  nc: Pick<NatsConnection, "subscribe"> & Partial<Pick<NatsConnection, "flush">>;
  logger: Logger;
  render: (from: number, bytes: Uint8Array) => string;
}): LogFeeds {
  const feeds = new Map<string, Feed>();
  let notices = 0;

  const open = (jobId: string): Feed => {
    const listeners = new Set<LogFeedListener>();
    const loop = superviseLoop({
      name: `live.job_log.${jobId}`,
      logger: opts.logger,
      open() {
        const sub = opts.nc.subscribe(jobLogSubject(jobId));
        return { items: sub, close: () => sub.unsubscribe() };
      },
      handle(msg) {
        const event = fromBinary(JobLogChunkStoredSchema, msg.data);
        const notice: ChunkNotice = { offset: Number(event.offset), size: event.size, bytes: null };
        if (event.gzip.length > 0) {
          try {
            const bytes = gunzipSync(event.gzip, { maxOutputLength: Math.max(event.size, 1) });
            if (bytes.length === event.size) notice.bytes = bytes;
            else opts.logger.warn({ jobId, offset: notice.offset }, "log chunk notice's bytes are not its size");
          } catch (err) {
            // The store holds what the agent sent: the listeners read it from there.
            opts.logger.warn({ err, jobId, offset: notice.offset }, "log chunk notice's bytes unreadable");
          }
        }
        notices++;
        for (const listener of listeners) listener.notice(notice);
      },
      onBreak() {
        for (const listener of listeners) listener.broke();
      },
    });
    return {
      listeners,
      stop: () => loop.stop(),
      ready: opts.nc.flush ? opts.nc.flush() : Promise.resolve(),
      renderings: new Map(),
    };
  };

  return {
    watch(jobId, listener) {
      let feed = feeds.get(jobId);
      if (!feed) {
        feed = open(jobId);
        feeds.set(jobId, feed);
      }
      const own = feed;
      own.listeners.add(listener);
      let stopped = false;
      return {
        ready: own.ready,
        render(from, bytes) {
          const key = `${from}:${bytes.length}`;
          let html = own.renderings.get(key);
          if (html === undefined) {
            html = opts.render(from, bytes);
            own.renderings.set(key, html);
            // The oldest goes first (a Map keeps insertion order).
            if (own.renderings.size > RENDERINGS_KEPT)
              own.renderings.delete(own.renderings.keys().next().value as string);
          }
          return html;
        },
        stop() {
          if (stopped) return;
          stopped = true;
          own.listeners.delete(listener);
          if (own.listeners.size > 0 || feeds.get(jobId) !== own) return;
          feeds.delete(jobId);
          own.stop().catch((err: unknown) => opts.logger.warn({ err, jobId }, "log feed did not stop cleanly"));
        },
      };
    },
    stats() {
      let listeners = 0;
      for (const feed of feeds.values()) listeners += feed.listeners.size;
      return { jobs: feeds.size, listeners, notices };
    },
  };
}
