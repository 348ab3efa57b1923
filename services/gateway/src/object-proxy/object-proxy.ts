import { Readable, Transform } from "node:stream";
import httpProxy from "@fastify/http-proxy";
import type { FastifyInstance } from "fastify";
import { liftBodyDeadline } from "../app/client-limits.js";
import { HttpError } from "../errors/http-error.js";

/** The path prefix under which the gateway forwards signed requests to the object store (ARTIFACTS_PROXY). */
const OBJECTS_PREFIX = "/objects";

/** How long the store may go silent (ms) before a forwarded request fails: 5 minutes. */
export const STORE_IDLE_TIMEOUT_MS = 300_000;

/** Why an upload was given up: none of its bytes moved towards the store for the idle deadline. */
class UploadStalledError extends Error {
  override name = "UploadStalledError";
}

/**
 * The upload's body as it goes to the store, failing with UploadStalledError once none of its bytes has moved for
 * `idleMs`. Bytes move only as fast as the store reads them (backpressure), so this is the deadline of a store that
 * stops reading mid-upload, which undici's deadlines do not cover while the request body is being sent (a client
 * that stops sending trips it too). On failure the client's remaining bytes are read and dropped, so that the
 * answer reaches it.
 */
function watchUpload(body: Readable, idleMs: number): Transform {
  const watched = new Transform({
    transform(chunk, _encoding, done) {
      timer.refresh();
      done(null, chunk);
    },
    flush(done) {
      clearTimeout(timer);
      done();
    },
  });
  const timer = setTimeout(() => {
    watched.destroy(new UploadStalledError(`the object store took none of the upload's bytes for ${idleMs} ms`));
  }, idleMs);
  watched.once("close", () => {
    clearTimeout(timer);
    body.unpipe(watched);
    if (!body.readableEnded) body.resume();
  });
  body.once("error", (err) => watched.destroy(err));
  body.pipe(watched);
  return watched;
}

/** The error an upload stalled by the store answers with; any other proxy error as @fastify/reply-from has it. */
function proxyError(error: Error): Error {
  const cause = (error as { cause?: unknown }).cause;
  const stalled = error instanceof UploadStalledError ? error : cause instanceof UploadStalledError ? cause : null;
  return stalled ? new HttpError(504, `Gateway Timeout: ${stalled.message}`) : error;
}

/**
 * Headers on everything the store answers through the gateway. An artifact is whatever a job uploaded (an HTML page,
 * an SVG with a script): served from the gateway's own origin, which the pages share, it must never run there. The
 * CSP `sandbox` gives the document an origin of its own and no scripts, `nosniff` keeps the browser to the stored
 * type, and nothing may frame it.
 */
export const DOWNLOAD_HEADERS = {
  "content-security-policy":
    "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
} as const;

/**
 * With ARTIFACTS_PROXY, the gateway is the object store's public address: `/objects/<bucket>` (signed POST uploads)
 * and `/objects/<bucket>/<key>` (signed GET and HEAD downloads) are forwarded to the store with @fastify/http-proxy,
 * bodies streamed both ways (never buffered). The store still checks every signature: URLs are signed for the
 * gateway's public host and the bucket path, so the forwarded request carries that Host, loses the prefix and any
 * Authorization header (a client following the API's 302 to the same host may send its bearer token along, which
 * the store would take for a second signature). Nothing else of the store is reachable: other buckets, listings and
 * other methods answer 404.
 */
export async function registerObjectProxy(
  app: FastifyInstance,
  opts: { storeUrl: string; bucket: string; publicUrl: string; storeIdleTimeoutMs?: number },
): Promise<void> {
  const idleMs = opts.storeIdleTimeoutMs ?? STORE_IDLE_TIMEOUT_MS;
  const publicHost = new URL(opts.publicUrl).host;
  const bucketPath = `${OBJECTS_PREFIX}/${opts.bucket}`;
  await app.register(async (scope) => {
    // Bodies pass through untouched: the proxy's own parsers hand the request stream on, so the gateway's JSON
    // parser and body limit stay out of this scope, and so does the body deadline of API requests (an upload of
    // gigabytes takes minutes; the store's silences are bounded instead, below).
    scope.removeAllContentTypeParsers();
    scope.addHook("onRequest", liftBodyDeadline);
    await scope.register(httpProxy, {
      upstream: opts.storeUrl,
      prefix: OBJECTS_PREFIX,
      rewritePrefix: "",
      httpMethods: ["GET", "HEAD", "POST"],
      preHandler: async (request) => {
        const path = (request.raw.url ?? "").split("?", 1)[0] ?? "";
        const upload = request.method === "POST" && (path === bucketPath || path === `${bucketPath}/`);
        const download =
          request.method !== "POST" && path.startsWith(`${bucketPath}/`) && path.length > bucketPath.length + 1;
        if (!upload && !download) throw new HttpError(404, "Not Found");
        if (upload && request.body instanceof Readable) request.body = watchUpload(request.body, idleMs);
      },
      replyOptions: {
        rewriteRequestHeaders: (_request, headers) => {
          const { authorization: _authorization, ...rest } = headers;
          return { ...rest, host: publicHost };
        },
        onError: (reply, { error }) => reply.send(proxyError(error)),
        rewriteHeaders: (headers) => ({ ...headers, ...DOWNLOAD_HEADERS }),
      },
      // Uploads of up to 5 GiB take their time, so nothing bounds a transfer's length, only the store's silences: the
      // headers deadline does not run while the request body is still being sent (undici), so it bounds the wait for
      // the store's answer after the last byte went; the body deadline is the longest gap between bytes of the answer.
      // A store that stops reading an upload's body trips watchUpload instead. A store that stalls fails that request
      // (504, or a download cut short) instead of holding it, and the agent's transfer with it, for ever.
      undici: { headersTimeout: idleMs, bodyTimeout: idleMs },
    });
  });
}
