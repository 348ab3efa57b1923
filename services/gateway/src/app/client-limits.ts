import type { ServerOptions, ServerResponse } from "node:http";
import { REQUEST_ID_HEADER } from "@conveyor/runtime";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from "fastify";

/**
 * Bounds on what one client connection may hold, so that slow or oversized requests cannot tie up the gateway:
 * - headers (request line included) larger than `maxHeaderBytes` are refused by Node with 431;
 * - a URL longer than `maxUrlBytes` is refused with 414 before any route runs;
 * - headers not complete within `headersTimeoutMs` get 408 and the connection is closed (Node's headersTimeout,
 *   checked every `checkIntervalMs`);
 * - a request whose body has not fully arrived within `bodyTimeoutMs` of its start gets 408 and its connection is
 *   closed. The object store proxy (`/objects`, ARTIFACTS_PROXY) lifts this deadline in its own scope
 *   (liftBodyDeadline): an artifact of gigabytes may take minutes, and it streams without buffering.
 * - a streamed answer (a log, an artifact through the proxy) has no deadline, however long it takes the client to
 *   read it; a client that reads nothing of it for `readIdleTimeoutMs` while the gateway waits to send more is
 *   disconnected, so that it holds no stream open upstream.
 */
export interface ClientLimits {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  readIdleTimeoutMs: number;
  maxHeaderBytes: number;
  maxUrlBytes: number;
}

export const DEFAULT_CLIENT_LIMITS: ClientLimits = {
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 30_000,
  readIdleTimeoutMs: 60_000,
  maxHeaderBytes: 16 * 1024,
  maxUrlBytes: 8 * 1024,
};

/** Path parameters longer than this are refused before routing (Fastify's default; slugs and ids are ≤ 100). */
const MAX_PARAM_LENGTH = 100;

/**
 * The errors Fastify's router raises before any hook runs, in the API's JSON shape (its own bodies echo the path):
 * a malformed percent-encoding is 400, an over-long path segment 414.
 */
function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const tooLong = error.code === "FST_ERR_MAX_PARAM_LENGTH";
  reply
    .code(tooLong ? 414 : 400)
    .header(REQUEST_ID_HEADER, request.id)
    .send({
      message: tooLong
        ? `URI Too Long: a path segment must be at most ${MAX_PARAM_LENGTH} characters`
        : "Bad Request: the URL is not valid (check its percent-encoding)",
    });
}

/** Fastify's server options for these limits. */
export function clientLimitOptions(
  limits: ClientLimits,
): { http: ServerOptions; routerOptions: { maxParamLength: number } } & Pick<FastifyServerOptions, "frameworkErrors"> {
  return {
    frameworkErrors: frameworkErrors as FastifyServerOptions["frameworkErrors"],
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    http: {
      maxHeaderSize: limits.maxHeaderBytes,
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 2))),
    },
  };
}

const TIMEOUT_BODY = JSON.stringify({
  message: "Request Timeout: the request body did not arrive in time; send it in one go and try again",
});

/** The body deadline of each request under way (cleared once its body is in, or lifted by its route's scope). */
const bodyTimers = new WeakMap<FastifyRequest, NodeJS.Timeout>();

/** Registers the URL bound and the body deadline on every request of the app (see ClientLimits). */
export function registerClientLimits(app: FastifyInstance, limits: ClientLimits): void {
  app.addHook("onRequest", (request, reply, done) => {
    if (request.url.length > limits.maxUrlBytes) {
      reply.code(414).send({ message: `URI Too Long: the URL must be at most ${limits.maxUrlBytes} bytes` });
      return;
    }
    const timer = setTimeout(() => {
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(408, { "content-type": "application/json; charset=utf-8", connection: "close" });
        reply.raw.end(TIMEOUT_BODY);
      }
      request.raw.destroy();
    }, limits.bodyTimeoutMs);
    timer.unref();
    bodyTimers.set(request, timer);
    reply.raw.once("close", () => clearTimeout(timer));
    done();
  });
  // A streamed answer is read for as long as its client keeps reading (see dropStalledReader).
  app.addHook("onSend", (request, reply, payload, done) => {
    if (payload != null && typeof (payload as { pipe?: unknown }).pipe === "function") {
      dropStalledReader(reply.raw, limits.readIdleTimeoutMs, () =>
        request.log.warn(
          { readIdleTimeoutMs: limits.readIdleTimeoutMs },
          "client read nothing of a streamed answer for READ_IDLE_TIMEOUT_MS: disconnected",
        ),
      );
    }
    done(null, payload);
  });
  // Once the body is in (validation starts), the request is no longer a slow client's.
  app.addHook("preValidation", (request, _reply, done) => {
    clearTimeout(bodyTimers.get(request));
    done();
  });
}

/**
 * Disconnects a streamed answer's client once it has read nothing for `idleMs` while the answer waits to send more
 * (its buffer full): time the gateway spends waiting for the answer's source does not count.
 */
export function dropStalledReader(res: ServerResponse, idleMs: number, onDrop: () => void): void {
  let written = -1;
  let since = Date.now();
  const timer = setInterval(
    () => {
      const now = res.socket?.bytesWritten ?? 0;
      if (now !== written || !res.writableNeedDrain) {
        written = now;
        since = Date.now();
      } else if (Date.now() - since >= idleMs) {
        clearInterval(timer);
        onDrop();
        res.destroy();
      }
    },
    Math.max(10, Math.min(1_000, Math.floor(idleMs / 4))),
  );
  timer.unref();
  res.once("close", () => clearInterval(timer));
}

/** An onRequest hook for a scope whose bodies stream for as long as they take: it lifts their body deadline. */
export async function liftBodyDeadline(request: FastifyRequest): Promise<void> {
  clearTimeout(bodyTimers.get(request));
}
