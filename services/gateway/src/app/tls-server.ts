import { readFileSync } from "node:fs";
import { createSecureServer, type Http2SecureServer } from "node:http2";
import type { FastifyInstance } from "fastify";
import type { TlsConfig } from "../config.js";
import type { ClientLimits } from "./client-limits.js";

/**
 * The gateway's HTTPS listener (TLS_CERT_FILE, TLS_KEY_FILE, TLS_PORT): HTTP/2 and HTTP/1.1 on one port, chosen by
 * ALPN, both handled by the same app as the plain port (Fastify's `routing`), so REST, the agent API, the pages and
 * the agents' gRPC streams (agent-stream/) share one origin. The header bounds are the plain port's
 * (app/client-limits.ts); an HTTP/2 connection may carry up to 100 streams at once.
 */
export function createTlsServer(app: FastifyInstance, tls: TlsConfig, limits: ClientLimits): Http2SecureServer {
  const server = createSecureServer(
    {
      cert: readFileSync(tls.certFile),
      key: readFileSync(tls.keyFile),
      allowHTTP1: true,
      maxHeaderListPairs: 256,
      maxSendHeaderBlockLength: limits.maxHeaderBytes * 4,
      settings: { maxConcurrentStreams: 100, maxHeaderListSize: limits.maxHeaderBytes },
    },
    (req, res) => app.routing(req as never, res as never),
  );
  // An HTTP/1.1 request's headers have the plain port's deadline; HTTP/2 sessions end when idle for long.
  server.setTimeout(0);
  return server;
}

/** Listens, resolving the port taken (TLS_PORT 0 picks one). */
export function listenTls(server: Http2SecureServer, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : port);
    });
  });
}
