import { CredentialKind } from "@conveyor/proto/agents";
import { agentStreamWire as wire } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { type AgentCredentialCache, agentSecret } from "../agent-api/agent-credentials.js";
import type { AgentStreams } from "./agent-streams.js";

/** The path of the agent's streaming pings, at the root of its endpoint's host (docs/compatibility.md#streaming-pings). */
export const STREAM_PINGS_PATH = "/agentedge.v1.AgentEdgeService/StreamPings";

/** Bytes a stream may have waiting unread before it is ended (its messages are a few bytes each). */
const MAX_BUFFERED_BYTES = 64 * 1024;

export interface StreamRouteOptions {
  credentials: AgentCredentialCache;
  streams: AgentStreams;
  /** How often an HTTP/2 PING keeps an open stream's connection (and the proxies on its way) alive (ms). */
  keepaliveMs: number;
}

/**
 * `POST /agentedge.v1.AgentEdgeService/StreamPings`: the gRPC server stream of buildkite-agent's `--ping-mode auto`
 * (and `stream-only`), over HTTP/2 only (so over TLS: docs/configuration.md#tls). Authenticated like the agent API,
 * by the agent's access token in `Authorization: Token …`; the request must name that agent. Errors are gRPC statuses
 * in a trailers-only answer: Unimplemented over HTTP/1.1 and Unauthenticated for a bad credential (the agent then
 * polls for good), Unavailable when the agents service cannot be asked (it tries again later).
 */
export async function registerStreamPings(app: FastifyInstance, opts: StreamRouteOptions): Promise<void> {
  await app.register(async (scope) => {
    scope.addContentTypeParser(
      /^application\/grpc(\+proto)?$/,
      { parseAs: "buffer", bodyLimit: 64 * 1024 },
      (_request, body, done) => done(null, body),
    );
    scope.post(STREAM_PINGS_PATH, async (request, reply) => {
      reply.hijack();
      const res = reply.raw;
      const answer = (status: number, message: string) => {
        res.writeHead(200, {
          "content-type": "application/grpc",
          "grpc-status": String(status),
          "grpc-message": encodeURIComponent(message),
        });
        res.end();
      };
      if (request.raw.httpVersionMajor !== 2) {
        answer(
          wire.GRPC_STATUS.unimplemented,
          "StreamPings is served over HTTP/2 only (the gateway's TLS port): poll /v3/ping",
        );
        return;
      }
      const secret = agentSecret(request.headers.authorization);
      let credential: Awaited<ReturnType<AgentCredentialCache["get"]>> | undefined;
      try {
        credential = secret === undefined ? undefined : await opts.credentials.get(secret);
      } catch (err) {
        request.log.warn({ err }, "streaming ping: the agent's credential could not be checked");
        answer(wire.GRPC_STATUS.unavailable, "The agent's credential could not be checked: try again later");
        return;
      }
      if (!credential || credential.kind !== CredentialKind.AGENT) {
        answer(
          wire.GRPC_STATUS.unauthenticated,
          "Invalid or missing agent access token: send `Authorization: Token <token>`",
        );
        return;
      }
      const agentId = Buffer.isBuffer(request.body) ? wire.decodeRequest(request.body) : undefined;
      if (agentId === undefined) {
        answer(
          wire.GRPC_STATUS.invalidArgument,
          `The request must be one uncompressed StreamPingsRequest of at most ${wire.MAX_REQUEST_BYTES} bytes`,
        );
        return;
      }
      if (agentId !== credential.agentId) {
        answer(wire.GRPC_STATUS.permissionDenied, "agent_id is not the agent of this access token");
        return;
      }
      let ended = false;
      const end = (status: number, message: string) => {
        if (ended) return;
        ended = true;
        if (!res.headersSent) {
          answer(status, message);
          return;
        }
        res.addTrailers({ "grpc-status": String(status), "grpc-message": encodeURIComponent(message) });
        res.end();
      };
      const handle = opts.streams.open(
        { agentId, organizationId: credential.organizationId, clusterId: credential.clusterId },
        {
          send(action) {
            if (ended || res.destroyed) return;
            res.write(wire.frame(wire.encodeAction(action)));
            if (res.writableLength > MAX_BUFFERED_BYTES)
              end(wire.GRPC_STATUS.resourceExhausted, "The agent reads nothing");
          },
          end,
        },
      );
      if (!handle) {
        answer(wire.GRPC_STATUS.resourceExhausted, "This gateway holds as many streams as it may: poll /v3/ping");
        return;
      }
      res.writeHead(200, { "content-type": "application/grpc", "grpc-accept-encoding": "identity" });
      const session = (request.raw as { stream?: { session?: { ping(cb: () => void): boolean } } }).stream?.session;
      const keepalive = setInterval(() => session?.ping(() => {}), opts.keepaliveMs);
      keepalive.unref();
      res.once("close", () => {
        clearInterval(keepalive);
        ended = true;
        handle.close();
      });
    });
  });
}
