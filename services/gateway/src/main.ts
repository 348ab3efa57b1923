import { randomUUID } from "node:crypto";
import { connectNatsClient, createLogger, onShutdown, subscribePipelineEvents } from "@conveyor/runtime";
import { subscribeCredentialEvents } from "./agent-api/agent-credentials.js";
import { createAgentStreams } from "./agent-stream/agent-streams.js";
import { announceStream, followStreamEvents } from "./agent-stream/stream-events.js";
import { buildApp } from "./app/build-app.js";
import { DEFAULT_CLIENT_LIMITS } from "./app/client-limits.js";
import { createTlsServer, listenTls } from "./app/tls-server.js";
import { subscribeIdentityEvents } from "./auth/identity-events.js";
import { createGatewayClients } from "./clients/gateway-clients.js";
import { readGatewayConfig } from "./config.js";
import { createPipelineCache } from "./pipeline-cache/pipeline-cache.js";
import { shareRateLimitCounts } from "./rate-limit/rate-limit-sharing.js";
import { createRateLimiter } from "./rate-limit/rate-limiter.js";
import { createLiveHub, LIVE_PACE } from "./web/live/live-hub.js";

let logger = createLogger("gateway");
try {
  const config = readGatewayConfig(process.env);
  logger = createLogger("gateway", config.logLevel);
  const services = createGatewayClients(config);
  const pipelineCache = createPipelineCache(services.pipelines, { ttlMs: config.pipelineCacheTtlMs });
  const clients = { ...services, pipelines: pipelineCache.client };
  const rateLimiter =
    config.rateLimitPerMinute > 0
      ? createRateLimiter({ limit: config.rateLimitPerMinute, gatewayId: randomUUID() })
      : undefined;
  // Connected first: the live build pages subscribe on it while they are open (web/live/).
  const nc = await connectNatsClient(config.natsUrl, "gateway");
  const live = createLiveHub({ nc, logger, settings: { ...LIVE_PACE, ...config.liveStreams } });
  // The agents' streaming pings (agent-stream/): fed by NATS, so the gateway holding a stream hears of its agent.
  const streams = createAgentStreams({
    agents: clients.agents,
    builds: clients.builds,
    logger,
    announce: announceStream(nc),
  });
  const { app, principals, sessions, agentCredentials } = await buildApp({
    config,
    clients,
    logger,
    rateLimiter,
    live,
    streams,
    pipelineChanges: pipelineCache.onChange,
  });
  // Loops that keep this gateway's caches and peers' rate-limit counts current; stopped before NATS is drained, so
  // that the end of their subscriptions is not taken for a break.
  const stopLoops = [
    subscribeIdentityEvents(nc, { tokens: principals, sessions }, logger),
    subscribeCredentialEvents(nc, agentCredentials, logger),
    subscribePipelineEvents({ nc }, pipelineCache, logger),
    ...(rateLimiter ? [shareRateLimitCounts(nc, rateLimiter, logger)] : []),
    followStreamEvents(nc, streams, logger),
  ];
  // The TLS port first: the plain port's health check says the gateway is ready.
  const tlsServer = config.tls ? createTlsServer(app, config.tls, config.clientLimits ?? DEFAULT_CLIENT_LIMITS) : null;
  const tlsPort = tlsServer && config.tls ? await listenTls(tlsServer, config.host, config.tls.port) : null;
  await app.listen({ host: config.host, port: config.port });
  logger.info({ url: config.publicUrl, ...(tlsPort !== null ? { tlsPort } : {}) }, "gateway ready");
  onShutdown(logger, [
    // Streams end first (Unavailable: each agent polls, then streams to another gateway), then the listeners.
    async () => {
      streams.closeAll();
      if (tlsServer) await new Promise<void>((resolve) => tlsServer.close(() => resolve()));
    },
    () => app.close(),
    async () => {
      await Promise.all(stopLoops.map((stop) => stop()));
    },
    () => nc.drain(),
  ]);
} catch (err) {
  logger.fatal({ err }, "gateway failed to start");
  process.exit(1);
}
