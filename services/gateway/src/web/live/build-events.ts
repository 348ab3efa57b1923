import { type Build, BuildChangedSchema, type Job, JobStateChangedSchema } from "@conveyor/proto/builds";
import { type Logger, SUBJECTS, subscribeEvents } from "@conveyor/runtime";
import type { NatsConnection } from "@nats-io/transport-node";

/** What a live stream hears of one build. */
export interface BuildListener {
  /** A job of the build changed state (a new job included: a retry, an uploaded step). */
  job(job: Job): void;
  /** The build changed state; `finished` on the build_finished event. */
  build(build: Build, finished: boolean): void;
  /** A subscription broke and was made again: changes may have been missed (read the build again). */
  broke(): void;
}

/** A listener's place on the build events. */
export interface BuildWatch {
  /** Resolves once NATS has the subscriptions: a read of the build started after it misses no later change. */
  ready: Promise<void>;
  stop(): void;
}

/** The builds service's job and build state events, as the live streams of one gateway hear them. */
export interface BuildEvents {
  watch(buildId: string, listener: BuildListener): BuildWatch;
  /** How many builds this gateway's streams watch. */
  watched(): number;
}

/**
 * Subscribes to job_state_changed, build_state_changed and build_finished (the events every change of a build
 * already publishes; JetStream publishes reach plain subscribers too) while at least one live stream of this gateway
 * is open, and hands each event to the streams watching its build. The subjects do not name builds, so a gateway
 * with open pages hears every build's changes and keeps those of the builds its pages show; with no page open it
 * hears none. Each subscription is a supervised loop (subscribeEvents): a break tells every listener to read its
 * build again.
 */
export function createBuildEvents(opts: {
  nc: Pick<NatsConnection, "subscribe"> & Partial<Pick<NatsConnection, "flush">>;
  logger: Logger;
}): BuildEvents {
  const byBuild = new Map<string, Set<BuildListener>>();
  let stopAll: (() => Promise<void>) | undefined;
  let ready: Promise<void> = Promise.resolve();

  const each = (buildId: string, call: (listener: BuildListener) => void) => {
    for (const listener of byBuild.get(buildId) ?? []) call(listener);
  };
  const broke = () => {
    for (const listeners of byBuild.values()) for (const listener of listeners) listener.broke();
  };

  const start = () => {
    const nats = { nc: opts.nc as NatsConnection };
    const stops = [
      subscribeEvents(
        nats,
        SUBJECTS.builds.jobStateChanged,
        JobStateChangedSchema,
        opts.logger,
        (event) => {
          if (event.job) each(event.job.buildId, (l) => l.job(event.job as Job));
        },
        broke,
      ),
      ...[SUBJECTS.builds.buildStateChanged, SUBJECTS.builds.buildFinished].map((subject) =>
        subscribeEvents(
          nats,
          subject,
          BuildChangedSchema,
          opts.logger,
          (event) => {
            const build = event.build;
            if (build) each(build.id, (l) => l.build(build, subject === SUBJECTS.builds.buildFinished));
          },
          broke,
        ),
      ),
    ];
    ready = opts.nc.flush ? opts.nc.flush() : Promise.resolve();
    stopAll = async () => {
      await Promise.all(stops.map((stop) => stop()));
    };
  };

  return {
    watch(buildId, listener) {
      if (!stopAll) start();
      const listeners = byBuild.get(buildId) ?? new Set();
      listeners.add(listener);
      byBuild.set(buildId, listeners);
      let stopped = false;
      return {
        ready,
        stop() {
          if (stopped) return;
          stopped = true;
          listeners.delete(listener);
          if (listeners.size === 0 && byBuild.get(buildId) === listeners) byBuild.delete(buildId);
          if (byBuild.size > 0 || !stopAll) return;
          const stop = stopAll;
          stopAll = undefined;
          stop().catch((err: unknown) => opts.logger.warn({ err }, "build event subscriptions did not stop cleanly"));
        },
      };
    },
    watched: () => byBuild.size,
  };
}
