import * as http from "node:http";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { type HealthState, registerHealth } from "./health.js";
import { acceptRequestId } from "./request-context.js";
import { dependencyUnavailable } from "./unavailable.js";

export interface RpcServerOptions {
  host: string;
  port: number;
  /** Port of the HTTP/1.1 health endpoint (GET /healthz, GET /readyz). */
  healthPort: number;
  routes: (router: ConnectRouter) => void;
  health: HealthState;
  logger: Logger;
  /** Counters served as JSON at GET /stats on the health port (for benchmarks and operators). */
  stats?: () => Record<string, unknown>;
  /**
   * How long a client connection is served before it is retired (GOAWAY), so that the client opens a new one and a
   * balancer may place it on another replica; a random tenth of it is added per connection. 0 or absent: never.
   */
  maxConnectionAgeMs?: number;
}

export interface RpcServer {
  /** The RPC base URL, for example http://127.0.0.1:7101. */
  readonly url: string;
  readonly port: number;
  readonly healthPort: number;
  close(): Promise<void>;
}

/** How long a retired connection's calls may still run before the connection is cut. */
const RETIRE_GRACE_MS = 30_000;

/**
 * Retires an HTTP/2 connection: a GOAWAY naming the last call taken, after which the open calls finish and the
 * client opens a new connection for the next ones. A call the client sent before it saw the GOAWAY is refused
 * (REFUSED_STREAM: never processed), and our clients send it again (createServiceClient). Calls still open after
 * the grace are cut.
 */
export function retireSession(session: http2.ServerHttp2Session, graceMs = RETIRE_GRACE_MS): void {
  if (session.closed || session.destroyed) return;
  const cut = setTimeout(() => session.destroy(), graceMs);
  cut.unref();
  session.once("close", () => clearTimeout(cut));
  session.close();
}

/**
 * Serves Connect and gRPC over cleartext HTTP/2 on one port, and a plain HTTP/1.1 health endpoint on another
 * (Kubernetes probes and the stack launcher use it).
 */
export async function startRpcServer(opts: RpcServerOptions): Promise<RpcServer> {
  const handler = connectNodeAdapter({
    routes: (router) => {
      registerHealth(router, opts.health);
      opts.routes(router);
    },
    connect: true,
    grpc: true,
    grpcWeb: false,
    // A call naming a request id runs in its context: its log lines and the calls it makes carry the id. A handler
    // that cannot reach MongoDB, NATS or S3 answers Unavailable (the gateway's 503), not Internal.
    interceptors: [acceptRequestId, dependencyUnavailable],
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer(handler);
  let calls = 0;
  let opened = 0;
  server.on("stream", () => {
    calls++;
  });
  const maxAge = opts.maxConnectionAgeMs ?? 0;
  server.on("session", (session) => {
    opened++;
    sessions.add(session);
    if (maxAge > 0) {
      const timer = setTimeout(() => retireSession(session), maxAge + Math.floor(Math.random() * (maxAge / 10)));
      timer.unref();
      session.once("close", () => clearTimeout(timer));
    }
    session.once("close", () => sessions.delete(session));
  });
  await listen(server, opts.port, opts.host);

  const healthServer = http.createServer((req, res) => {
    if (req.url === "/stats") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          ...(opts.stats?.() ?? {}),
          rpcCalls: calls,
          connections: sessions.size,
          connectionsOpened: opened,
          cpuUsage: process.cpuUsage(),
          memory: process.memoryUsage(),
        }),
      );
      return;
    }
    const ok = req.url === "/healthz" || (req.url === "/readyz" && opts.health.serving);
    const known = req.url === "/healthz" || req.url === "/readyz";
    res.writeHead(known ? (ok ? 200 : 503) : 404, { "content-type": "application/json" });
    res.end(JSON.stringify({ status: known ? (ok ? "ok" : "not_ready") : "not_found" }));
  });
  await listen(healthServer, opts.healthPort, opts.host);

  const port = (server.address() as AddressInfo).port;
  const healthPort = (healthServer.address() as AddressInfo).port;
  opts.logger.info({ port, healthPort }, "rpc server listening");
  return {
    url: `http://${opts.host}:${port}`,
    port,
    healthPort,
    async close() {
      opts.health.setServing(false);
      const closed = Promise.all([
        new Promise<void>((resolve) => server.close(() => resolve())),
        new Promise<void>((resolve) => healthServer.close(() => resolve())),
      ]);
      // Let in-flight calls finish, then end the sessions so close() can complete.
      for (const s of sessions) retireSession(s);
      const timer = setTimeout(() => {
        for (const s of sessions) s.destroy();
      }, 5_000);
      await closed;
      clearTimeout(timer);
    },
  };
}

function listen(server: http.Server | http2.Http2Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}
