import { AgentsService } from "@conveyor/proto/agents";
import { AnnotationsService } from "@conveyor/proto/annotations";
import { ArtifactsService } from "@conveyor/proto/artifacts";
import { BuildsService } from "@conveyor/proto/builds";
import { IdentityService, RegistriesService, RulesService, TeamsService } from "@conveyor/proto/identity";
import { NotificationsService } from "@conveyor/proto/notifications";
import { OidcService } from "@conveyor/proto/oidc";
import { PipelinesService } from "@conveyor/proto/pipelines";
import { SecretsService } from "@conveyor/proto/secrets";
import { SourceProvidersService } from "@conveyor/proto/source-providers";
import { type Client, createServiceClient } from "@conveyor/runtime";
import type { GatewayConfig } from "../config.js";
import { batchBuildReads } from "./batched-build-reads.js";
import { batchHeartbeats } from "./batched-heartbeats.js";

/** One client per backend service; route modules receive these, so tests can hand in other transports. */
export interface GatewayClients {
  identity: Client<typeof IdentityService>;
  /** Served by the identity process, like rules and registries. */
  teams: Client<typeof TeamsService>;
  rules: Client<typeof RulesService>;
  registries: Client<typeof RegistriesService>;
  pipelines: Client<typeof PipelinesService>;
  builds: Client<typeof BuildsService>;
  /** Served by the builds process. */
  annotations: Client<typeof AnnotationsService>;
  artifacts: Client<typeof ArtifactsService>;
  agents: Client<typeof AgentsService>;
  /** Cluster secrets, served by the agents process. */
  secrets: Client<typeof SecretsService>;
  /** Jobs' OIDC tokens and the key set, served by the agents process. */
  oidc: Client<typeof OidcService>;
  /** Source-provider connections, served by the notifications process. */
  sourceProviders: Client<typeof SourceProvidersService>;
  /** Organization notification webhooks, served by the notifications process. */
  notifications: Client<typeof NotificationsService>;
}

/** Connect-protocol clients over HTTP/2 to every backend service. */
export function createGatewayClients(config: GatewayConfig): GatewayClients {
  const opts = { timeoutMs: config.rpcTimeoutMs };
  const builds = createServiceClient(BuildsService, config.serviceUrls.builds, opts);
  const agents = createServiceClient(AgentsService, config.serviceUrls.agents, opts);
  return {
    identity: createServiceClient(IdentityService, config.serviceUrls.identity, opts),
    teams: createServiceClient(TeamsService, config.serviceUrls.identity, opts),
    rules: createServiceClient(RulesService, config.serviceUrls.identity, opts),
    registries: createServiceClient(RegistriesService, config.serviceUrls.identity, opts),
    pipelines: createServiceClient(PipelinesService, config.serviceUrls.pipelines, opts),
    // Builds and pages are what pollers read most: concurrent reads go to the builds service in batches.
    builds: config.batchBuildReads ? batchBuildReads(builds, { slotMs: config.batchSlotMs }) : builds,
    annotations: createServiceClient(AnnotationsService, config.serviceUrls.builds, opts),
    artifacts: createServiceClient(ArtifactsService, config.serviceUrls.artifacts, opts),
    // Every connected agent heartbeats every 10 s: those arriving together go to the agents service in one call.
    agents: config.heartbeatLingerMs > 0 ? batchHeartbeats(agents, { lingerMs: config.heartbeatLingerMs }) : agents,
    secrets: createServiceClient(SecretsService, config.serviceUrls.agents, opts),
    oidc: createServiceClient(OidcService, config.serviceUrls.agents, opts),
    sourceProviders: createServiceClient(SourceProvidersService, config.serviceUrls.notifications, opts),
    notifications: createServiceClient(NotificationsService, config.serviceUrls.notifications, opts),
  };
}
