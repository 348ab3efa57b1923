import * as http from "node:http";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "pino";
import { type HealthState, registerHealth } from "./health.js";

export interface RpcServerOptions {
  host: string;
  port: number;
  /** Port of the HTTP/1.1 health endpoint (GET /healthz, GET /readyz). */
  healthPort: number;
  routes: (router: ConnectRouter) => void;
  health: HealthState;
  logger: Logger;
}

export interface RpcServer {
  /** The RPC base URL, for example http://127.0.0.1:7101. */
  readonly url: string;
  readonly port: number;
  readonly healthPort: number;
  close(): Promise<void>;
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
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer(handler);
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await listen(server, opts.port, opts.host);

  const healthServer = http.createServer((req, res) => {
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
      // Let in-flight calls finish, then end idle sessions so close() can complete.
      for (const s of sessions) s.close();
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
