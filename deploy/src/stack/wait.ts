import { request } from "node:http";
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { describeExit, type ManagedProcess } from "../host/child.js";

/** Raised when part of the stack does not come up; names the process and its log file. */
export class StackStartError extends Error {
  override name = "StackStartError";
  constructor(
    message: string,
    /** The log to read, when the failure belongs to one process. */
    readonly logFile?: string,
    /** The last lines of that log. */
    readonly logTail?: string,
  ) {
    super(message);
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export function tcpAccepts(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/** The status code of a GET, or undefined when there is no HTTP answer. Uses no connection pool. */
export function httpStatus(url: string, timeoutMs = 2000): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { method: "GET", agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      res.once("end", () => resolve(res.statusCode));
      res.once("error", () => resolve(res.statusCode));
    });
    req.once("timeout", () => req.destroy());
    req.once("error", () => resolve(undefined));
    req.end();
  });
}

export interface WaitOptions {
  /** What is awaited, for messages: "identity", "FerretDB", … */
  what: string;
  timeoutMs: number;
  /** The process that should come up; waiting fails at once when it exits. */
  proc?: ManagedProcess;
  signal?: AbortSignal;
  intervalMs?: number;
}

/** Polls a check until it holds; fails fast when the process exits, and after the timeout. */
export async function waitUntil(check: () => Promise<boolean>, opts: WaitOptions): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let interval = opts.intervalMs ?? 100;
  for (;;) {
    if (opts.signal?.aborted) throw new StackStartError(`start of ${opts.what} was interrupted`);
    if (opts.proc && !opts.proc.running()) {
      const status = await opts.proc.exited;
      throw new StackStartError(
        `${opts.what} ${describeExit(status)} while starting; its log is ${opts.proc.logFile}`,
        opts.proc.logFile,
        opts.proc.logTail(),
      );
    }
    if (await check()) return;
    if (Date.now() > deadline) {
      throw new StackStartError(
        `${opts.what} did not become ready within ${Math.round(opts.timeoutMs / 1000)} s` +
          (opts.proc ? `; its log is ${opts.proc.logFile}` : ""),
        opts.proc?.logFile,
        opts.proc?.logTail(),
      );
    }
    await sleep(interval);
    interval = Math.min(interval * 1.5, 500);
  }
}
