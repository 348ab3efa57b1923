import type { BackendService } from "@conveyor/runtime";
import type { StackPorts } from "../ports/ports.js";

/** S3 settings the artifacts service receives. */
export interface S3Settings {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
}

/** Where everything of a running stack is. */
export interface StackInfo {
  /** The gateway's base URL; REST routes are under /v2. */
  apiUrl: string;
  /** The agent API's base URL (apiUrl + /v3). */
  agentUrl: string;
  /**
   * The agent API on the gateway's TLS port (https://localhost:<TLS port>/v3), where agents stream their pings over
   * HTTP/2; absent when the stack has no TLS (no openssl). Agents trust it through `trustFile` (SSL_CERT_FILE).
   */
  agentTlsUrl?: string;
  /** The local CA with the system's roots (stack/local-tls.ts): SSL_CERT_FILE of the agents using agentTlsUrl. */
  trustFile?: string;
  /** Each backend service's Connect/gRPC base URL. */
  serviceUrls: Record<BackendService, string>;
  mongodbUrl: string;
  natsUrl: string;
  s3: S3Settings;
  /** Which MongoDB-wire, NATS and S3 servers run ("external" when given by the user). */
  servers: { mongodb: string; nats: string; s3: string };
  ports: StackPorts;
  dataDir: string;
  logsDir: string;
  /** The buildkite-agent binary (BUILDKITE_AGENT_BIN, on PATH, or built into the cache); the stack runs none. */
  agentBin: string;
  /** Replicas of each backend service and of the gateway (CONVEYOR_REPLICAS), when more than one. */
  replicas?: number;
}
