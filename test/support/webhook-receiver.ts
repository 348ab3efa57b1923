import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One POST a receiver took: its headers and body, and whether its signature or token was right. */
export interface Received {
  path: string;
  event: string;
  delivery: string;
  body: Record<string, unknown>;
  raw: string;
  /** Whether its signature or token is the path's webhook token (checked when read, against the token known then). */
  readonly verified: boolean;
}

/**
 * Verifies `X-Buildkite-Signature: timestamp=<t>,signature=<hex>` as Buildkite's documentation describes: the HMAC-
 * SHA256 of "<t>.<raw body>" keyed by the webhook's token, compared in constant time, and a timestamp within five
 * minutes (replays are refused).
 */
export function verifySignature(header: string, raw: string, token: string, nowS = Date.now() / 1000): boolean {
  const parts = Object.fromEntries(header.split(",").map((kv) => kv.split("=", 2) as [string, string]));
  const t = Number(parts.timestamp);
  if (!Number.isInteger(t) || Math.abs(nowS - t) > 300 || !/^[0-9a-f]{64}$/.test(parts.signature ?? "")) return false;
  const expected = createHmac("sha256", token).update(`${t}.${raw}`).digest();
  return timingSafeEqual(expected, Buffer.from(parts.signature ?? "", "hex"));
}

/**
 * A local HTTP receiver of notification webhooks. `tokens` maps a path to the webhook's token (set once the create
 * answered it); `answer` decides each request's status (default 200), or null to never answer (a hung receiver).
 * Requests are kept in arrival order; `unique()` drops repeats of a delivery id, as a receiver should.
 */
export async function startReceiver(host = "127.0.0.1") {
  const received: Received[] = [];
  const tokens = new Map<string, string>();
  let answer: (path: string, n: number) => number | null = () => 200;
  const hung: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const path = req.url ?? "";
      if (path.startsWith("/redirect-to/")) {
        res.writeHead(302, { location: decodeURIComponent(path.slice("/redirect-to/".length)) }).end();
        return;
      }
      const signature = String(req.headers["x-buildkite-signature"] ?? "");
      const tokenHeader = req.headers["x-buildkite-token"];
      const arrivedS = Date.now() / 1000;
      /** Checked against the path's token when asked: a webhook's first ping may come before its token is known. */
      const check = () => {
        const token = tokens.get(path) ?? "";
        return signature ? verifySignature(signature, raw, token, arrivedS) : token !== "" && tokenHeader === token;
      };
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw);
      } catch {
        // kept as raw
      }
      received.push({
        path,
        event: String(req.headers["x-buildkite-event"] ?? ""),
        delivery: String(req.headers["x-buildkite-delivery"] ?? ""),
        body,
        raw,
        get verified() {
          return check();
        },
      });
      const status = answer(path, received.filter((r) => r.path === path).length);
      if (status === null) {
        hung.push(res);
        return;
      }
      // Paths without a token (notify: webhooks and Slack, which carry none) are answered without checking.
      res.writeHead(!tokens.has(path) || check() ? status : 401).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path: string) => `http://${host}:${port}${path}`,
    port,
    received,
    tokens,
    setAnswer(fn: typeof answer) {
      answer = fn;
    },
    at: (path: string) => received.filter((r) => r.path === path),
    /** The deliveries of a path, each delivery id once. */
    unique(path: string) {
      const seen = new Set<string>();
      return received.filter((r) => r.path === path && !seen.has(r.delivery) && seen.add(r.delivery));
    },
    async close() {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Waits until `check` is true, or fails naming what it waited for. */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
