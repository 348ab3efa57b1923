/**
 * The default addresses of the stack. `npm start` uses them; tests start an isolated stack on free ports instead.
 * None of them is a port a machine's own servers usually take (27017, 4222, 9000, 8080 is the REST default by design).
 */
export const DEFAULT_PORTS = {
  gateway: 8080,
  identity: 7101,
  pipelines: 7102,
  builds: 7103,
  artifacts: 7104,
  agents: 7105,
  notifications: 7106,
  mongodb: 27117,
  nats: 4322,
  s3: 9100,
} as const;

/** The six backend services, in start order. */
export const BACKEND_SERVICES = ["identity", "pipelines", "builds", "artifacts", "agents", "notifications"] as const;
export type BackendService = (typeof BACKEND_SERVICES)[number];

/** The HTTP/1.1 health endpoint of a process listens on its RPC port + this offset. */
export const HEALTH_PORT_OFFSET = 100;

/** The environment variable holding a backend service's RPC base URL, for example IDENTITY_URL. */
export function serviceUrlVar(service: BackendService): string {
  return `${service.toUpperCase()}_URL`;
}

/** The default base URL of a backend service. */
export function defaultServiceUrl(service: BackendService): string {
  return `http://127.0.0.1:${DEFAULT_PORTS[service]}`;
}

export const DEFAULT_MONGODB_URL = `mongodb://127.0.0.1:${DEFAULT_PORTS.mongodb}`;
export const DEFAULT_NATS_URL = `nats://127.0.0.1:${DEFAULT_PORTS.nats}`;
export const DEFAULT_S3_ENDPOINT = `http://127.0.0.1:${DEFAULT_PORTS.s3}`;
