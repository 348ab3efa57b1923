import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import type { LookupFunction } from "node:net";
import { Agent, request } from "undici";
import { createEnvReader, type Env } from "../process/config.js";
import { type AllowList, connectRefusal, ipLiteral, parseAllowList } from "./address-policy.js";

/**
 * The one client for requests to addresses users give (webhooks, Slack, forges' APIs): no server-side request
 * forgery (docs/security.md#outbound-requests). The address actually connected to is checked in the connection's
 * own DNS lookup (so a name that resolves to a public address for a check and to 127.0.0.1 for the connection
 * cannot get through), IP literals before connecting, and every redirect is followed here, a few at most, each
 * checked again. Answers are read up to a small bound; connecting and the whole request have timeouts.
 */
export interface OutboundConfig {
  allow: AllowList;
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  maxRedirects: number;
  maxResponseBytes: number;
}

/** Parses OUTBOUND_ALLOW_HOSTS, OUTBOUND_CONNECT_TIMEOUT_MS, OUTBOUND_TIMEOUT_MS and OUTBOUND_MAX_RESPONSE_BYTES. */
export function readOutboundConfig(env: Env): OutboundConfig {
  const r = createEnvReader(env);
  let allow: AllowList;
  try {
    allow = parseAllowList(r.optionalString("OUTBOUND_ALLOW_HOSTS") ?? "");
  } catch (err) {
    throw new Error(`OUTBOUND_ALLOW_HOSTS: ${(err as Error).message}`);
  }
  return {
    allow,
    connectTimeoutMs: r.int("OUTBOUND_CONNECT_TIMEOUT_MS", 5_000, { min: 100, max: 60_000 }),
    totalTimeoutMs: r.int("OUTBOUND_TIMEOUT_MS", 15_000, { min: 100, max: 120_000 }),
    maxRedirects: 3,
    maxResponseBytes: r.int("OUTBOUND_MAX_RESPONSE_BYTES", 65_536, { min: 1_024, max: 1_048_576 }),
  };
}

/** A request refused before anything was sent to its address (or a redirect's). */
export class OutboundRefusedError extends Error {
  readonly code = "OUTBOUND_REFUSED";
}

/** Whether an error is (or was caused by) a refusal of the address. */
export function isOutboundRefused(err: unknown): boolean {
  for (let e = err as { code?: string; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as never, i++) {
    if (e instanceof OutboundRefusedError || e.code === "OUTBOUND_REFUSED") return true;
  }
  return false;
}

export interface OutboundRequest {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string>;
  /** The answer's first maxResponseBytes, as text. */
  body: string;
  truncated: boolean;
  /** The URL that answered (after redirects). */
  url: string;
}

export interface OutboundClient {
  request(url: string, init?: OutboundRequest): Promise<OutboundResponse>;
  close(): Promise<void>;
}

/** A DNS lookup that refuses names resolving to an address the allow list does not let through. */
export function guardedLookup(allow: AllowList, resolve: typeof dnsLookup = dnsLookup): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    resolve(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err);
      for (const a of addresses) {
        const why = connectRefusal(allow, hostname, a.address);
        if (why) return callback(new OutboundRefusedError(`${hostname} resolves to ${why}`));
      }
      const [first] = addresses;
      if (!first) return callback(new Error(`${hostname} has no address`));
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  }) as LookupFunction;
}

/** Why a URL is refused before any connection (its scheme, credentials, an IP literal's range), or null. */
export function urlRefusal(allow: AllowList, url: URL): string | null {
  if (url.protocol !== "http:" && url.protocol !== "https:") return `${url.protocol} URLs are not allowed`;
  if (url.username || url.password) return "URLs with credentials are not allowed";
  const literal = ipLiteral(url.hostname);
  return literal === null ? null : connectRefusal(allow, url.hostname, literal);
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export function createOutboundClient(config: OutboundConfig): OutboundClient {
  const agent = new Agent({
    connect: { timeout: config.connectTimeoutMs, lookup: guardedLookup(config.allow) },
    headersTimeout: config.totalTimeoutMs,
    bodyTimeout: config.totalTimeoutMs,
    connections: 64,
  });

  const once = async (url: URL, init: OutboundRequest, signal: AbortSignal) => {
    const refused = urlRefusal(config.allow, url);
    if (refused) throw new OutboundRefusedError(refused);
    const res = await request(url, {
      dispatcher: agent,
      method: init.method ?? "GET",
      headers: init.headers,
      body: init.body,
      signal,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      const room = config.maxResponseBytes - size;
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room));
        truncated = true;
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
    if (truncated) res.body.destroy();
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) headers[k] = Array.isArray(v) ? v.join(", ") : String(v ?? "");
    return { status: res.statusCode, headers, body: Buffer.concat(chunks).toString("utf8"), truncated };
  };

  return {
    async request(rawUrl, init = {}) {
      const signal = init.signal
        ? AbortSignal.any([init.signal, AbortSignal.timeout(config.totalTimeoutMs)])
        : AbortSignal.timeout(config.totalTimeoutMs);
      let url = new URL(rawUrl);
      let current = init;
      for (let hop = 0; ; hop++) {
        const res = await once(url, current, signal);
        const location = res.headers.location;
        if (!REDIRECTS.has(res.status) || !location) return { ...res, url: url.toString() };
        if (hop >= config.maxRedirects) throw new Error(`more than ${config.maxRedirects} redirects`);
        url = new URL(location, url);
        // 303, and 301/302 after anything but GET, become a GET without the body (as browsers do).
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && current.method !== "GET")) {
          const { body: _body, ...rest } = current;
          current = { ...rest, method: "GET" };
        }
      }
    },
    close: () => agent.close(),
  };
}
