import type { Logger } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";
import { type BuildEvents, createBuildEvents } from "./build-events.js";
import { renderLines } from "./live-lines.js";
import { createLogFeeds, type LogFeeds } from "./log-feeds.js";
import { createStreamLimits, type StreamLimitSettings, type StreamLimits } from "./stream-limits.js";

/** The bounds and pace of live streams (docs/pages.md#live-updates; the limits from config.ts). */
export interface LiveSettings extends StreamLimitSettings {
  /** A quiet stream gets a comment this often. */
  keepAliveMs: number;
  /** Unread bytes past which a client's stream is dropped (it reconnects and resumes). */
  maxBufferedBytes: number;
  /** Unread bytes past which reading a stored log waits for the client. */
  roomBytes: number;
  /** What browsers wait before reconnecting. */
  retryMs: number;
  /** How long a gap in a log waits for its chunk before it is read (log-assembler.ts). */
  gapWaitMs: number;
}

/** The defaults, apart from the limits (config.ts reads those). */
export const LIVE_PACE = {
  keepAliveMs: 15_000,
  maxBufferedBytes: 4 * 1024 * 1024,
  roomBytes: 512 * 1024,
  retryMs: 2_000,
  gapWaitMs: 250,
};

/** What every live stream of one gateway shares: the NATS feeds, the build events, the stream counts. */
export interface LiveHub {
  feeds: LogFeeds;
  events: BuildEvents;
  limits: StreamLimits;
  settings: LiveSettings;
}

/** Creates the gateway's live hub on its NATS connection (main.ts). */
export function createLiveHub(opts: {
  nc: Pick<NatsConnection, "subscribe"> & Partial<Pick<NatsConnection, "flush">>;
  logger: Logger;
  settings: LiveSettings;
}): LiveHub {
  return {
    feeds: createLogFeeds({ nc: opts.nc, logger: opts.logger, render: renderLines }),
    events: createBuildEvents({ nc: opts.nc, logger: opts.logger }),
    limits: createStreamLimits(opts.settings),
    settings: opts.settings,
  };
}
