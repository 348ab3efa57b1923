import type { OutgoingHttpHeaders } from "node:http";
import type { Job } from "@conveyor/proto/builds";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpError } from "../../errors/http-error.js";
import { typed } from "../../route-declarations/declare.js";
import { BuildParams } from "../../route-declarations/params.js";
import { openLog } from "../log/log-reader.js";
import { buildAccess, mayUnblock, teamsOf } from "../pages/build-data.js";
import { buildStateBadge } from "../pages/build-header.js";
import { type JobRowContext, jobsInOrder, renderJobRow, renderJobs } from "../pages/build-jobs.js";
import type { WebDeps } from "../web-deps.js";
import type { LiveHub } from "./live-hub.js";
import { type LiveRender, type LiveStream, startLiveStream } from "./live-stream.js";
import type { LogReader } from "./log-assembler.js";
import { type LogCursors, parseCursors } from "./log-cursors.js";
import { openSse, type SseWriter } from "./sse-writer.js";

/** The live stream's query: the logs the page follows and where it has each (log-cursors.ts). */
const LiveQuery = Type.Object({ logs: Type.Optional(Type.String({ maxLength: 2048 })) });

/** Seconds a refused stream is told to wait before trying again. */
const RETRY_AFTER_S = 10;

/** The path of a build page's live stream. */
export function livePath(buildPath: string, logs?: string): string {
  return `${buildPath}/live${logs ? `?logs=${encodeURIComponent(logs)}` : ""}`;
}

/**
 * Where each followed log resumes: the page's `logs` parameter names the logs and where it had them; a reconnecting
 * browser's Last-Event-ID (the cursors of the last log event it got) says where it is now, for the logs it names.
 */
function cursorsOf(request: FastifyRequest, logs: string | undefined): LogCursors {
  const named = parseCursors(logs ?? "");
  if (!named) throw new HttpError(400, "The logs parameter must list up to 20 job:offset pairs");
  const header = request.headers["last-event-id"];
  const resumed = typeof header === "string" ? parseCursors(header) : null;
  for (const [job, offset] of resumed ?? []) if (named.has(job)) named.set(job, offset);
  return named;
}

/**
 * The build page's rows, as the page renders them (pages/build-jobs.ts), for this person: what they may do decides
 * the buttons each row shows.
 */
function rowsFor(ctx: Omit<JobRowContext, "now">): LiveRender {
  const at = (): JobRowContext => ({ ...ctx, now: Date.now() });
  return {
    rows: (jobs) => jobsInOrder(jobs),
    row: (row) => renderJobRow(row.job, row.attempts, at()).value,
    list: (jobs) => renderJobs(jobs, at()).value,
    state: (build) => buildStateBadge(build).value,
  };
}

/**
 * GET /{org}/{pipeline}/builds/{n}/live: the build page's live stream (docs/pages.md#live-updates), a
 * text/event-stream for a signed-in person who may read the build, as its page. Past the person's or the gateway's
 * number of open streams it is refused with 429 or 503 and Retry-After.
 */
export function registerLiveRoute(scope: FastifyInstance, deps: WebDeps, hub: LiveHub): void {
  // Open streams end when the gateway shuts down (the browsers reconnect to another one): the server waits for every
  // connection to end before it closes, and a live page's would not.
  const open = new Set<SseWriter>();
  scope.addHook("preClose", async () => {
    for (const sse of open) sse.end();
  });
  typed(scope).get(
    "/:org/:pipeline/builds/:number/live",
    { schema: { params: BuildParams, querystring: LiveQuery }, preHandler: deps.requireSignIn },
    async (request, reply) => {
      const cursors = cursorsOf(request, request.query.logs);
      const { access, pipeline, canBuild } = await buildAccess(request, deps, request.params);
      const ref = { pipelineId: pipeline.id, number: request.params.number };
      const readBuild = async () => {
        const { build } = await deps.readBuild(ref.pipelineId, ref.number);
        if (!build) throw new HttpError(404, "No build found");
        return build;
      };
      const [build, teams] = await Promise.all([readBuild(), teamsOf(request, deps, access)]);
      const admission = hub.limits.admit(request.principal?.user?.id ?? request.ip);
      if ("refused" in admission) {
        reply.header("retry-after", String(RETRY_AFTER_S));
        throw new HttpError(
          admission.refused,
          admission.refused === 429
            ? "Too many live pages open: close some and try again"
            : "Too many live pages open on this server: try again shortly",
        );
      }
      const render = rowsFor({
        orgSlug: access.organization?.slug ?? request.params.org,
        pipelineSlug: pipeline.slug,
        buildNumber: build.number,
        canBuild,
        mayUnblock: (job: Job) => mayUnblock(job, { canBuild, teams }),
        csrf: deps.csrfField(request),
      });
      const readLog = (jobId: string): LogReader =>
        async function* (from, signal) {
          const { pieces } = await openLog(
            (req, opts) => deps.clients.builds.streamJobLog(req, opts),
            { ...ref, jobId },
            { fromOffset: from },
            signal,
          );
          yield* pieces;
        };
      const { settings } = hub;
      // The answer is written here from now on: Fastify's hooks do not see it, so the headers they set are copied.
      reply.hijack();
      let stream: LiveStream | undefined;
      const sse = openSse(reply.raw, {
        ...settings,
        headers: reply.getHeaders() as OutgoingHttpHeaders,
        onClose(why) {
          open.delete(sse);
          stream?.stop();
          admission.release();
          if (why === "slow")
            request.log.info({ buildId: build.id }, "live stream dropped: its client reads too slowly");
        },
      });
      open.add(sse);
      stream = startLiveStream(
        {
          feeds: hub.feeds,
          events: hub.events,
          readLog,
          readBuild,
          render,
          logger: request.log,
          gapWaitMs: settings.gapWaitMs,
        },
        { buildId: build.id, cursors, send: (event) => sse.send(event), room: () => sse.room(), end: () => sse.end() },
      );
      stream.started.catch((err: unknown) => {
        request.log.warn({ err, buildId: build.id }, "live stream could not start");
        sse.end();
      });
    },
  );
}
