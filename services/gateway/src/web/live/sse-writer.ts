import type { OutgoingHttpHeaders, ServerResponse } from "node:http";

/** One server-sent event. `data` is one line (JSON): SSE splits data at line ends. */
export interface SseEvent {
  event: string;
  /** The event's id: what the browser sends back as Last-Event-ID when it reconnects. */
  id?: string;
  data: string;
}

export interface SseWriterOptions {
  /** Bytes the client may leave unread before its stream is dropped (it reconnects with Last-Event-ID). */
  maxBufferedBytes: number;
  /** Above this many unread bytes, `room()` waits for the client to read (catching up waits; live events do not). */
  roomBytes: number;
  /** How often a comment goes out on a quiet stream, so proxies and the browser keep it open. */
  keepAliveMs: number;
  /** What the browser waits before reconnecting after the connection drops (the SSE `retry` field). */
  retryMs: number;
  /** Headers to send besides the stream's own (the security headers the scope's hooks set). */
  headers?: OutgoingHttpHeaders;
  /** Called once when the stream ends, however (the client left, it was too slow, the server closed it). */
  onClose(why: "client" | "slow" | "done"): void;
}

/** A text/event-stream answer being written. */
export interface SseWriter {
  send(event: SseEvent): void;
  /** Resolves once the client has read enough of what was sent (or the stream closed). */
  room(): Promise<void>;
  /** Ends the stream (after what was sent). */
  end(): void;
  readonly closed: boolean;
}

/**
 * Writes server-sent events on a raw response, bounded: a client that does not read (a slow link, a suspended tab
 * whose socket stays open) makes the socket's buffer grow, and past `maxBufferedBytes` its stream is dropped
 * instead of the gateway holding more; the browser reconnects and resumes from its last event id. A comment every
 * `keepAliveMs` keeps a quiet stream open through proxies.
 */
export function openSse(res: ServerResponse, opts: SseWriterOptions): SseWriter {
  let closed = false;
  const close = (why: "client" | "slow" | "done") => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    opts.onClose(why);
  };
  res.writeHead(200, {
    ...opts.headers,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    // Proxies that buffer answers (nginx) would hold the events back.
    "x-accel-buffering": "no",
  });
  res.on("close", () => close("client"));
  // A client gone before the stream opened never emits "close" again: end it as soon as the caller has it.
  if (res.destroyed) queueMicrotask(() => close("client"));
  const write = (chunk: string) => {
    if (closed) return;
    res.write(chunk);
    if (res.writableLength > opts.maxBufferedBytes) {
      close("slow");
      res.destroy();
    }
  };
  write(`retry: ${opts.retryMs}\n\n`);
  const keepAlive = setInterval(() => write(": keep-alive\n\n"), opts.keepAliveMs);
  keepAlive.unref?.();
  return {
    send(event) {
      if (/[\r\n]/.test(event.event) || /[\r\n]/.test(event.id ?? "") || /[\r\n]/.test(event.data))
        throw new Error("an SSE field must be one line");
      write(`event: ${event.event}\n${event.id === undefined ? "" : `id: ${event.id}\n`}data: ${event.data}\n\n`);
    },
    room() {
      if (closed || res.writableLength <= opts.roomBytes) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    },
    end() {
      if (closed) return;
      close("done");
      res.end();
    },
    get closed() {
      return closed;
    },
  };
}
