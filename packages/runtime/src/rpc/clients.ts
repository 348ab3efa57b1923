import type { ClientHttp2Session } from "node:http2";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { propagateRequestId } from "./request-context.js";

export interface ServiceClientOptions {
  /**
   * Upper bound of every unary call, in milliseconds. A streaming call has no bound on its whole length (a large log
   * read by a slow client takes as long as the client takes): it fails only when the service sends nothing for this
   * long while the caller waits for its next message (docs/limits.md).
   */
  timeoutMs?: number;
  /** "connect" (default, fastest in Node) or "grpc". */
  protocol?: "connect" | "grpc";
  interceptors?: Interceptor[];
}

/** How many times a call the server refused unprocessed is sent again. */
const REFUSED_RETRIES = 3;

/** Whether a call failed because the server refused its HTTP/2 stream: it was never processed (RFC 9113 §8.7). */
export function isRefusedStream(err: unknown): boolean {
  return err instanceof ConnectError && err.message.includes("REFUSED_STREAM");
}

/**
 * Sends a unary call again when the server refused its stream unprocessed, which happens when a server retires a
 * connection (MAX_CONNECTION_AGE_S, or a graceful shutdown) while the call was on its way: safe for any call, since
 * the server never saw it. Streaming calls are left alone.
 */
export const retryRefusedStreams: Interceptor = (next) => async (req) => {
  for (let attempt = 0; ; attempt++) {
    try {
      return await next(req);
    } catch (err) {
      if (req.stream || attempt >= REFUSED_RETRIES || !isRefusedStream(err)) throw err;
    }
  }
};

/**
 * Ends a streaming call whose service sends nothing for `idleMs` while the caller waits for a message (for its
 * headers, or its next message): DeadlineExceeded, as a deadline would. Time the caller spends before asking for the
 * next message does not count, so a slow reader downstream (HTTP/2 flow control holds the service back meanwhile)
 * never ends its stream. Unary calls are left to their deadline.
 */
export function streamIdleTimeout(idleMs: number): Interceptor {
  return (next) => async (req) => {
    if (!req.stream) return next(req);
    const idle = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(
        () => idle.abort(new ConnectError(`the service sent nothing for ${idleMs} ms`, Code.DeadlineExceeded)),
        idleMs,
      );
    };
    arm();
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next({ ...req, signal: AbortSignal.any([req.signal, idle.signal]) });
    } finally {
      clearTimeout(timer);
    }
    if (!res.stream) return res;
    const messages = res.message;
    async function* watched() {
      const it = messages[Symbol.asyncIterator]();
      try {
        for (;;) {
          arm();
          const step = await it.next().catch((err: unknown) => {
            throw idle.signal.aborted ? idle.signal.reason : err;
          });
          clearTimeout(timer);
          if (step.done) return;
          yield step.value;
        }
      } finally {
        clearTimeout(timer);
        await it.return?.();
      }
    }
    return { ...res, message: watched() };
  };
}

const guarded = new WeakSet<ClientHttp2Session>();

/**
 * connect-node's HTTP/2 session manager, with every session guarded against a crash. connect-node 2.1.2 destroys an
 * idle session with an error when the server sends GOAWAY (a server retiring the connection after
 * MAX_CONNECTION_AGE_S, or shutting down gracefully: every rolling update), and a call starting before that error
 * is emitted makes it detach its own error listener: the error event then has no listener and kills the process.
 * Each session gets a listener of ours that stays; connect-node still reports errors to the calls themselves.
 */
export class GuardedHttp2SessionManager extends Http2SessionManager {
  override async request(...args: Parameters<Http2SessionManager["request"]>) {
    const stream = await super.request(...args);
    const session = stream.session as ClientHttp2Session | undefined;
    if (session && !guarded.has(session)) {
      guarded.add(session);
      session.on("error", () => {
        // Reported to the calls by connect-node; this listener only keeps the process alive.
      });
    }
    return stream;
  }
}

/**
 * A client of one backend service over HTTP/2, binary protobuf, uncompressed, with a deadline on every unary call and
 * an idle timeout on every streaming one (`timeoutMs` for both); calls the server refused unprocessed are sent
 * again; a call made in a request's context carries its request id.
 */
export function createServiceClient<T extends DescService>(
  service: T,
  baseUrl: string,
  opts: ServiceClientOptions = {},
): Client<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const common = {
    baseUrl,
    useBinaryFormat: true,
    // Answers come uncompressed: the services talk inside one cluster, where gzip costs more CPU than it saves.
    // connect-node asks for gzip by default, and every answer over 1 KB was compressed by the service and
    // decompressed by the caller (about 8% of the builds service's CPU while builds were being created).
    acceptCompression: [],
  };
  const interceptors = [propagateRequestId, retryRefusedStreams, ...(opts.interceptors ?? [])];
  const sessionManager = new GuardedHttp2SessionManager(baseUrl);
  const make = (defaultTimeoutMs: number | undefined, extra: Interceptor[]): Transport => {
    const options = { ...common, defaultTimeoutMs, interceptors: [...interceptors, ...extra], sessionManager };
    return opts.protocol === "grpc"
      ? createGrpcTransport(options)
      : createConnectTransport({ ...options, httpVersion: "2" });
  };
  // One connection, two transports: unary calls with a deadline, streams with no deadline and an idle timeout.
  const unary = make(timeoutMs, []);
  const streams = make(undefined, [streamIdleTimeout(timeoutMs)]);
  const transport: Transport = { unary: unary.unary.bind(unary), stream: streams.stream.bind(streams) };
  return createClient(service, transport);
}
export type { Client } from "@connectrpc/connect";
