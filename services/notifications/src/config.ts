import { createEnvReader, DEFAULT_PORTS, defaultServiceUrl, type Env } from "@conveyor/runtime";
import type { DispatcherConfig } from "./dispatch/dispatcher.js";

/** The notifications service's own settings (docs/configuration.md#the-notifications-service). */
export interface NotificationsConfig {
  readonly dispatch: DispatcherConfig;
  /** How long a delivery is tried before it is given up. */
  readonly retryForMs: number;
  /** How often the dispatcher looks for due deliveries (besides at once when an event stored some). */
  readonly dispatchEveryMs: number;
  /** Finished deliveries are kept this long (the last 20 of a webhook are what REST shows). */
  readonly keepFinishedMs: number;
  /** The most webhooks one organization may have. */
  readonly maxWebhooksPerOrganization: number;
  /** The most deliveries one organization may have pending; past it new ones are recorded failed. */
  readonly maxPendingPerOrganization: number;
  /** The services a webhook's body is read from. */
  readonly serviceUrls: { identity: string; pipelines: string; builds: string };
  /** The gateway's API and pages, for the links in what is sent (PUBLIC_URL, WEB_URL). */
  readonly publicUrl: string;
  readonly webUrl: string;
  /** Where email notifications go (smtp://, smtps://, with credentials if any); unset: none can be sent. */
  readonly smtpUrl: string | undefined;
  /** Their sender. */
  readonly smtpFrom: string;
  /**
   * The handlers' caches of pipelines and of organizations' webhooks (docs/notifications.md#what-the-handlers-read):
   * how long an entry is used at most (a missed event's staleness; 0 turns them off) and how many each keeps.
   */
  readonly cache: { readonly ttlMs: number; readonly max: number };
}

/**
 * Parses NOTIFY_RETRY_FOR_S, NOTIFY_RETRY_BASE_MS, NOTIFY_RETRY_MAX_MS, NOTIFY_MAX_ATTEMPTS, NOTIFY_LEASE_S,
 * NOTIFY_MAX_IN_FLIGHT, NOTIFY_PER_ORGANIZATION, NOTIFY_PER_HOST, NOTIFY_DISPATCH_INTERVAL_MS, NOTIFY_KEEP_HOURS and
 * NOTIFY_MAX_WEBHOOKS, NOTIFY_MAX_PENDING, NOTIFY_CACHE_TTL_MS, NOTIFY_CACHE_MAX, IDENTITY_URL, PIPELINES_URL, BUILDS_URL, PUBLIC_URL, WEB_URL, SMTP_URL and SMTP_FROM once.
 */
export function readNotificationsConfig(env: Env): NotificationsConfig {
  const r = createEnvReader(env);
  const publicUrl = r.url("PUBLIC_URL", `http://127.0.0.1:${DEFAULT_PORTS.gateway}`);
  return Object.freeze({
    serviceUrls: Object.freeze({
      identity: r.url("IDENTITY_URL", defaultServiceUrl("identity")),
      pipelines: r.url("PIPELINES_URL", defaultServiceUrl("pipelines")),
      builds: r.url("BUILDS_URL", defaultServiceUrl("builds")),
    }),
    publicUrl,
    webUrl: r.url("WEB_URL", publicUrl),
    smtpUrl: r.optionalString("SMTP_URL"),
    smtpFrom: r.string("SMTP_FROM", "Conveyor <conveyor@localhost>"),
    dispatch: Object.freeze({
      retry: Object.freeze({
        baseMs: r.int("NOTIFY_RETRY_BASE_MS", 2_000, { min: 10, max: 600_000 }),
        maxMs: r.int("NOTIFY_RETRY_MAX_MS", 300_000, { min: 10, max: 3_600_000 }),
        maxAttempts: r.int("NOTIFY_MAX_ATTEMPTS", 12, { min: 1, max: 50 }),
      }),
      leaseMs: r.int("NOTIFY_LEASE_S", 60, { min: 5, max: 3600 }) * 1000,
      maxInFlight: r.int("NOTIFY_MAX_IN_FLIGHT", 64, { min: 1, max: 1000 }),
      perOrganization: r.int("NOTIFY_PER_ORGANIZATION", 8, { min: 1, max: 1000 }),
      perHost: r.int("NOTIFY_PER_HOST", 4, { min: 1, max: 1000 }),
      batch: 200,
    }),
    retryForMs: r.int("NOTIFY_RETRY_FOR_S", 3600, { min: 1, max: 7 * 86_400 }) * 1000,
    dispatchEveryMs: r.int("NOTIFY_DISPATCH_INTERVAL_MS", 1_000, { min: 50, max: 60_000 }),
    keepFinishedMs: r.int("NOTIFY_KEEP_HOURS", 168, { min: 1, max: 24 * 365 }) * 3_600_000,
    maxWebhooksPerOrganization: r.int("NOTIFY_MAX_WEBHOOKS", 50, { min: 1, max: 1000 }),
    maxPendingPerOrganization: r.int("NOTIFY_MAX_PENDING", 10_000, { min: 1, max: 1_000_000 }),
    cache: Object.freeze({
      ttlMs: r.int("NOTIFY_CACHE_TTL_MS", 30_000, { min: 0, max: 3_600_000 }),
      max: r.int("NOTIFY_CACHE_MAX", 10_000, { min: 1, max: 1_000_000 }),
    }),
  });
}
