import { isIP } from "node:net";
import {
  BACKEND_SERVICES,
  type BackendService,
  createEnvReader,
  DEFAULT_NATS_URL,
  DEFAULT_PORTS,
  DEFAULT_S3_ENDPOINT,
  defaultServiceUrl,
  type Env,
  serviceUrlVar,
} from "@conveyor/runtime";
import { type ClientLimits, DEFAULT_CLIENT_LIMITS } from "./app/client-limits.js";

/** The gateway's configuration, parsed once from the environment. */
export interface GatewayConfig {
  readonly host: string;
  readonly port: number;
  /** Base of every `url` field and Link header, for example http://127.0.0.1:8080. */
  readonly publicUrl: string;
  /** The issuer of jobs' OIDC tokens (OIDC_ISSUER, default PUBLIC_URL): `iss`, and where its documents are served. */
  readonly oidcIssuer: string;
  /** Base of every `web_url` field. */
  readonly webUrl: string;
  readonly serviceUrls: Readonly<Record<BackendService, string>>;
  readonly natsUrl: string;
  readonly logLevel: string;
  /** How long a resolved access token is trusted before identity is asked again. */
  readonly tokenCacheTtlMs: number;
  readonly bodyLimitBytes: number;
  readonly rpcTimeoutMs: number;
  /** How long a pipeline looked up by slug or id is kept (changes drop it at once). */
  readonly pipelineCacheTtlMs: number;
  /** How long a resolved agent credential is trusted before the agents service is asked again. */
  readonly agentCredentialTtlMs: number;
  /** What agents are told about logs: the chunk size they send and the longest log kept. */
  readonly agentLogs: Readonly<{ chunkBytes: number; maxLogBytes: number }>;
  /** Where artifact URLs point, and the object store proxy. */
  readonly artifacts: ArtifactsUrlConfig;
  /** REST requests per organization per minute, shared by every gateway; 0 turns the limit (and its headers) off. */
  readonly rateLimitPerMinute: number;
  /** Bytes of rendered build answers kept (answer-cache/answer-cache.ts); 0 keeps none. */
  readonly renderCacheBytes: number;
  /** Whether concurrent build and page reads go to the builds service together (clients/batched-build-reads.ts). */
  readonly batchBuildReads: boolean;
  /** A batched read call under way longer than this (ms) gives up its slot to the reads behind it. */
  readonly batchSlotMs: number;
  /**
   * At most one call of agents' heartbeats to the agents service per this many ms (those arriving meanwhile go
   * together); 0: each alone.
   */
  readonly heartbeatLingerMs: number;
  /** The addresses outbound requests leave from, published at GET /v2/meta (WEBHOOK_IPS; none by default). */
  readonly webhookIps: readonly string[];
  /** Header, URL and time bounds on every client connection (app/client-limits.ts). */
  readonly clientLimits: Readonly<ClientLimits>;
  /** Live build pages' streams this gateway holds open, per person and in all (web/live/stream-limits.ts). */
  readonly liveStreams: Readonly<{ perPerson: number; total: number }>;
  /** Which proxies' X-Forwarded-For and X-Forwarded-Proto are believed (Fastify's trustProxy; see parseTrustProxy). */
  readonly trustProxy: TrustProxy;
  /** HTTPS (HTTP/2 and HTTP/1.1 by ALPN) beside the plain port, when a certificate and key are given (app/tls-server.ts). */
  readonly tls: TlsConfig | null;
}

/** TLS_CERT_FILE, TLS_KEY_FILE and TLS_PORT: where the gateway serves HTTPS (docs/configuration.md#tls). */
export interface TlsConfig {
  readonly certFile: string;
  readonly keyFile: string;
  readonly port: number;
}

/** The TLS listener: both files or neither (a certificate without its key is a mistake, not a choice). */
export function parseTls(env: Env, defaultPort: number): TlsConfig | null {
  const r = createEnvReader(env);
  const certFile = r.optionalString("TLS_CERT_FILE")?.trim() || undefined;
  const keyFile = r.optionalString("TLS_KEY_FILE")?.trim() || undefined;
  if (certFile === undefined && keyFile === undefined) return null;
  if (certFile === undefined || keyFile === undefined)
    throw new Error("TLS_CERT_FILE and TLS_KEY_FILE go together: give both (HTTPS on TLS_PORT) or neither");
  return Object.freeze({ certFile, keyFile, port: r.int("TLS_PORT", defaultPort, { min: 0, max: 65535 }) });
}

/** Fastify's trustProxy as TRUST_PROXY gives it: off, every proxy, the nearest N hops, or these addresses/CIDRs. */
export type TrustProxy = boolean | number | readonly string[];

/**
 * TRUST_PROXY: unset or `false` believes no proxy (the client address is the connection's); `true` every one; a
 * number that many hops nearest the gateway; otherwise comma-separated addresses and CIDRs of the proxies in front.
 * Behind a load balancer or ingress it must be set, or every person shares the proxy's address (and the sign-in
 * limits per address, and the agents' recorded addresses, are the proxy's).
 */
export function parseTrustProxy(value: string | undefined): TrustProxy {
  const v = (value ?? "").trim();
  if (v === "" || v === "false") return false;
  if (v === "true") return true;
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    if (hops < 1 || hops > 100) throw new Error(`TRUST_PROXY: ${v} hops is not between 1 and 100`);
    return hops;
  }
  const list = v.split(",").map((part) => part.trim());
  const bad = list.find((part) => !/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(part));
  if (bad !== undefined) {
    throw new Error(
      `TRUST_PROXY: "${bad}" is not an address or CIDR (give true, false, a number of hops, or addresses and CIDRs separated by commas)`,
    );
  }
  return list;
}

/** Whether `part` is an IPv4 or IPv6 address, or one with a prefix length its family allows (a CIDR). */
function isAddressOrCidr(part: string): boolean {
  const [address = "", prefix, extra] = part.split("/");
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * WEBHOOK_IPS: the addresses and CIDRs this deployment's outbound requests (webhooks, notifications, commit statuses)
 * leave from, as the operator knows them (its NAT gateway, say), published at GET /v2/meta for firewalls to allow.
 */
export function parseWebhookIps(value: string | undefined): string[] {
  const list = (value ?? "")
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "");
  const bad = list.find((part) => !isAddressOrCidr(part));
  if (bad !== undefined)
    throw new Error(`WEBHOOK_IPS: "${bad}" is not an address or CIDR (give addresses and CIDRs separated by commas)`);
  return list;
}

/** Where signed artifact URLs point (see README, Artifacts). */
export interface ArtifactsUrlConfig {
  /** The object store's own endpoint (S3_ENDPOINT): what the proxy forwards to. */
  readonly storeUrl: string;
  /** S3_BUCKET: the only bucket the proxy forwards to. */
  readonly bucket: string;
  /** ARTIFACTS_PROXY: serve /objects/* by forwarding to the store, and point signed URLs there. */
  readonly proxy: boolean;
  /** The base signed URLs carry: PUBLIC_URL/objects with the proxy, else S3_PUBLIC_URL (default S3_ENDPOINT). */
  readonly urlBase: string;
}

/**
 * Parses HOST, PORT, PUBLIC_URL, WEB_URL, <SERVICE>_URL, NATS_URL, LOG_LEVEL, TOKEN_CACHE_TTL_MS, BODY_LIMIT_BYTES,
 * RPC_TIMEOUT_MS, PIPELINE_CACHE_TTL_MS, AGENT_CREDENTIAL_CACHE_TTL_MS, AGENT_LOG_CHUNK_BYTES, JOB_LOG_MAX_BYTES, S3_ENDPOINT, S3_BUCKET,
 * S3_PUBLIC_URL, ARTIFACTS_PROXY, RATE_LIMIT_PER_MINUTE, RENDER_CACHE_MB, LIVE_STREAMS_PER_PERSON, LIVE_STREAMS,
 * TLS_CERT_FILE, TLS_KEY_FILE and TLS_PORT.
 */
export function readGatewayConfig(env: Env): GatewayConfig {
  const r = createEnvReader(env);
  const host = r.string("HOST", "127.0.0.1");
  const port = r.int("PORT", DEFAULT_PORTS.gateway, { min: 0, max: 65535 });
  const publicUrl = r.url("PUBLIC_URL", `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`);
  const serviceUrls = Object.fromEntries(
    BACKEND_SERVICES.map((s) => [s, r.url(serviceUrlVar(s), defaultServiceUrl(s))]),
  ) as Record<BackendService, string>;
  const storeUrl = r.url("S3_ENDPOINT", DEFAULT_S3_ENDPOINT);
  const proxy = r.bool("ARTIFACTS_PROXY", false);
  const artifacts = Object.freeze({
    storeUrl,
    bucket: r.string("S3_BUCKET", "conveyor-artifacts"),
    proxy,
    urlBase: proxy ? `${publicUrl}/objects` : r.url("S3_PUBLIC_URL", storeUrl),
  });
  return Object.freeze({
    host,
    port,
    publicUrl,
    oidcIssuer: r.url("OIDC_ISSUER", publicUrl).replace(/\/$/, ""),
    webUrl: r.url("WEB_URL", publicUrl),
    serviceUrls: Object.freeze(serviceUrls),
    natsUrl: r.string("NATS_URL", DEFAULT_NATS_URL),
    logLevel: r.string("LOG_LEVEL", "info"),
    tokenCacheTtlMs: r.int("TOKEN_CACHE_TTL_MS", 5_000, { min: 0 }),
    bodyLimitBytes: r.int("BODY_LIMIT_BYTES", 2 * 1024 * 1024, { min: 1024 }),
    rpcTimeoutMs: r.int("RPC_TIMEOUT_MS", 10_000, { min: 100 }),
    pipelineCacheTtlMs: r.int("PIPELINE_CACHE_TTL_MS", 30_000, { min: 0 }),
    agentCredentialTtlMs: r.int("AGENT_CREDENTIAL_CACHE_TTL_MS", 60_000, { min: 0 }),
    agentLogs: Object.freeze({
      // Below the builds service's largest accepted chunk (JOB_LOG_CHUNK_MAX_BYTES, 1 MiB by default).
      chunkBytes: r.int("AGENT_LOG_CHUNK_BYTES", 100 * 1024, { min: 1024, max: 1024 * 1024 }),
      maxLogBytes: r.int("JOB_LOG_MAX_BYTES", 256 * 1024 * 1024, { min: 1024 }),
    }),
    artifacts,
    // Buildkite's default limit (docs/compatibility.md#rate-limits).
    rateLimitPerMinute: r.int("RATE_LIMIT_PER_MINUTE", 200, { min: 0 }),
    renderCacheBytes: r.int("RENDER_CACHE_MB", 64, { min: 0, max: 64 * 1024 }) * 1024 * 1024,
    batchBuildReads: r.bool("BATCH_BUILD_READS", true),
    batchSlotMs: r.int("BATCH_SLOT_MS", 40, { min: 1, max: 60_000 }),
    heartbeatLingerMs: r.int("HEARTBEAT_LINGER_MS", 250, { min: 0, max: 5_000 }),
    webhookIps: parseWebhookIps(r.optionalString("WEBHOOK_IPS")),
    clientLimits: Object.freeze({
      headersTimeoutMs: r.int("HEADERS_TIMEOUT_MS", DEFAULT_CLIENT_LIMITS.headersTimeoutMs, { min: 100 }),
      bodyTimeoutMs: r.int("BODY_TIMEOUT_MS", DEFAULT_CLIENT_LIMITS.bodyTimeoutMs, { min: 100 }),
      readIdleTimeoutMs: r.int("READ_IDLE_TIMEOUT_MS", DEFAULT_CLIENT_LIMITS.readIdleTimeoutMs, { min: 100 }),
      maxHeaderBytes: r.int("MAX_HEADER_BYTES", DEFAULT_CLIENT_LIMITS.maxHeaderBytes, { min: 1024, max: 1024 * 1024 }),
      maxUrlBytes: r.int("MAX_URL_BYTES", DEFAULT_CLIENT_LIMITS.maxUrlBytes, { min: 256, max: 1024 * 1024 }),
    }),
    liveStreams: Object.freeze({
      perPerson: r.int("LIVE_STREAMS_PER_PERSON", 20, { min: 1 }),
      total: r.int("LIVE_STREAMS", 1000, { min: 1 }),
    }),
    trustProxy: parseTrustProxy(r.optionalString("TRUST_PROXY")),
    tls: parseTls(env, port === 0 ? 0 : 8443),
  });
}
