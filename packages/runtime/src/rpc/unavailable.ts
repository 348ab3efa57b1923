import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/** The MongoDB driver's errors for a server it cannot reach (as opposed to a command the server refused). */
const MONGO_UNREACHABLE = new Set([
  "MongoServerSelectionError",
  "MongoNetworkError",
  "MongoNetworkTimeoutError",
  "MongoPoolClearedError",
  "MongoTopologyClosedError",
  "MongoNotConnectedError",
]);

/** NATS client errors for a server it cannot reach or that does not answer in time. */
const NATS_UNREACHABLE = new Set(["ClosedConnectionError", "ConnectionError", "NoRespondersError", "TimeoutError"]);

/** Socket errors of a server that is down or went away (the S3 client's, among others). */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * Whether an error means that a dependency (MongoDB, NATS, S3) could not be reached, looking through its causes:
 * such a call is as retryable as one that found no server, so it is answered Unavailable (503), not Internal (500).
 */
export function isDependencyUnavailable(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const { name, code, cause } = current as { name?: unknown; code?: unknown; cause?: unknown };
    if (typeof name === "string" && (MONGO_UNREACHABLE.has(name) || NATS_UNREACHABLE.has(name))) return true;
    if (typeof code === "string" && SOCKET_CODES.has(code)) return true;
    current = cause;
  }
  return false;
}

/**
 * A server interceptor that turns a handler's failure to reach a dependency into Unavailable with a plain message
 * (the cause stays attached for logs); every other error passes unchanged.
 */
export const dependencyUnavailable: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (err) {
    if (err instanceof ConnectError || !isDependencyUnavailable(err)) throw err;
    throw new ConnectError("a backing service is unavailable", Code.Unavailable, undefined, undefined, err);
  }
};
