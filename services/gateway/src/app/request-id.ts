import { REQUEST_ID_HEADER, requestIdFrom, runWithRequestId } from "@conveyor/runtime";
import type { FastifyInstance, FastifyServerOptions } from "fastify";

/**
 * Request ids: a request keeps the `X-Request-Id` its client sent when it is valid (1–128 characters of
 * `A-Za-z0-9._:/+=@-`), else gets a new UUID; the answer carries it; the request is served in its context, so that
 * every RPC it makes carries it and every log line written for it names it (`requestId`, by createLogger's mixin).
 * Route code passes nothing: the service clients' interceptor (propagateRequestId) reads the context, which Fastify
 * keeps over body parsing, however late the body arrives (request-id.test.ts checks it with a slow client).
 */
export const requestIdOptions: Pick<FastifyServerOptions, "genReqId" | "requestIdHeader" | "childLoggerFactory"> = {
  requestIdHeader: false,
  genReqId: (req) => requestIdFrom(req.headers[REQUEST_ID_HEADER]),
  // The logger's mixin names the request id of the context; a binding of Fastify's would name it twice.
  childLoggerFactory: (logger, _bindings, opts) => logger.child({}, opts),
};

/** Answers every request with its id and serves it in that id's context. */
export function registerRequestIds(app: FastifyInstance): void {
  app.addHook("onRequest", (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    runWithRequestId(request.id, done);
  });
}
