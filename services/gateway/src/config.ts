import {
  BACKEND_SERVICES,
  type BackendService,
  createEnvReader,
  DEFAULT_NATS_URL,
  DEFAULT_PORTS,
  defaultServiceUrl,
  type Env,
  serviceUrlVar,
} from "@conveyor/runtime";

/** The gateway's configuration, parsed once from the environment. */
export interface GatewayConfig {
  readonly host: string;
  readonly port: number;
  /** Base of every `url` field and Link header, for example http://127.0.0.1:8080. */
  readonly publicUrl: string;
  /** Base of every `web_url` field. */
  readonly webUrl: string;
  readonly serviceUrls: Readonly<Record<BackendService, string>>;
  readonly natsUrl: string;
  readonly logLevel: string;
  /** How long a resolved access token is trusted before identity is asked again. */
  readonly tokenCacheTtlMs: number;
  readonly bodyLimitBytes: number;
  readonly rpcTimeoutMs: number;
}

/** Parses HOST, PORT, PUBLIC_URL, WEB_URL, <SERVICE>_URL, NATS_URL, LOG_LEVEL, TOKEN_CACHE_TTL_MS, BODY_LIMIT_BYTES, RPC_TIMEOUT_MS. */
export function readGatewayConfig(env: Env): GatewayConfig {
  const r = createEnvReader(env);
  const host = r.string("HOST", "127.0.0.1");
  const port = r.int("PORT", DEFAULT_PORTS.gateway, { min: 0, max: 65535 });
  const publicUrl = r.url("PUBLIC_URL", `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`);
  const serviceUrls = Object.fromEntries(
    BACKEND_SERVICES.map((s) => [s, r.url(serviceUrlVar(s), defaultServiceUrl(s))]),
  ) as Record<BackendService, string>;
  return Object.freeze({
    host,
    port,
    publicUrl,
    webUrl: r.url("WEB_URL", publicUrl),
    serviceUrls: Object.freeze(serviceUrls),
    natsUrl: r.string("NATS_URL", DEFAULT_NATS_URL),
    logLevel: r.string("LOG_LEVEL", "info"),
    tokenCacheTtlMs: r.int("TOKEN_CACHE_TTL_MS", 5_000, { min: 0 }),
    bodyLimitBytes: r.int("BODY_LIMIT_BYTES", 2 * 1024 * 1024, { min: 1024 }),
    rpcTimeoutMs: r.int("RPC_TIMEOUT_MS", 10_000, { min: 100 }),
  });
}
