import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { Interceptor } from "@connectrpc/connect";

/**
 * The request id of the work in progress, carried without being passed by hand: the gateway takes it from the
 * client's `X-Request-Id` (when valid) or makes one, answers with it, and runs the request in its context; every
 * RPC sent from that context carries it (`propagateRequestId`), every RPC served runs in its context
 * (`acceptRequestId`), and every log line written in it names it (createLogger's mixin).
 */
export const REQUEST_ID_HEADER = "x-request-id";

interface RequestContext {
  readonly requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** A client-supplied id is kept when it is 1–128 visible ASCII characters of a safe set; else a new one is made. */
const VALID_REQUEST_ID = /^[A-Za-z0-9._:/+=@-]{1,128}$/;

/** Whether a client-supplied request id may be kept (VALID_REQUEST_ID). */
export function isValidRequestId(value: unknown): value is string {
  return typeof value === "string" && VALID_REQUEST_ID.test(value);
}

/** The id a request gets: the one its client sent when valid, else a new UUID. */
export function requestIdFrom(header: string | string[] | undefined | null): string {
  const value = Array.isArray(header) ? header[0] : header;
  return isValidRequestId(value) ? value : randomUUID();
}

/** The request id of the current asynchronous context, if any. */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/** Runs `fn` (and everything it starts) in the context of a request id. */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return storage.run({ requestId }, fn);
}

/** Client side: every call made in a request's context carries its id, unless the caller set one. */
export const propagateRequestId: Interceptor = (next) => async (req) => {
  const id = currentRequestId();
  if (id && !req.header.has(REQUEST_ID_HEADER)) req.header.set(REQUEST_ID_HEADER, id);
  return next(req);
};

/** Server side: a call that names a valid request id is served in its context. */
export const acceptRequestId: Interceptor = (next) => async (req) => {
  const id = req.header.get(REQUEST_ID_HEADER);
  return isValidRequestId(id) ? runWithRequestId(id, () => next(req)) : next(req);
};
