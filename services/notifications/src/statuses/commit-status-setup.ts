import type { ServiceImpl } from "@connectrpc/connect";
import { BuildsService } from "@conveyor/proto/builds";
import { IdentityService } from "@conveyor/proto/identity";
import type { SourceProvidersService } from "@conveyor/proto/source-providers";
import {
  createServiceClient,
  defaultServiceUrl,
  type Env,
  isOutboundRefused,
  type Logger,
  type OutboundClient,
  readOutboundConfig,
  repeat,
  serviceUrlVar,
  urlRefusal,
} from "@conveyor/runtime";
import type { Db } from "mongodb";
import type { PipelineCache } from "../cache/pipeline-cache.js";
import type { Channel } from "../dispatch/channel.js";
import type { EventHandler } from "../events/handler.js";
import { createGithubAppTokens, type OutboundCall } from "../providers/github-app.js";
import { readProvidersConfig } from "../providers/provider-config.js";
import { createMongoSourceProviderRepository } from "../providers/source-provider-repository.js";
import { createSourceProviders, rewrapCredentials, type SourceProviders } from "../providers/source-providers.js";
import { createSourceProvidersRpcs } from "../rpc/source-providers-rpc.js";
import { createCommitStatusChannel } from "./commit-status-channel.js";
import { createCommitStatusHandler } from "./commit-status-handler.js";
import { createMongoStatusMarkRepository } from "./status-mark-repository.js";
import { createRpcStatusSources } from "./status-sources.js";

/** How long a commit and context's mark is kept after its last status (docs/statuses.md#order). */
const KEEP_MARKS_MS = 30 * 86_400_000;
/** How often old marks are removed, and credentials of a previous key rewrapped. */
const SWEEP_EVERY_MS = 3_600_000;

/** The commit-status parts of the notifications process (docs/statuses.md): listed in handlers.ts and channels.ts. */
export interface CommitStatusParts {
  providers: SourceProviders;
  handler: EventHandler;
  channel: Channel;
  rpcs: ServiceImpl<typeof SourceProvidersService>;
}

export interface CommitStatusSetupDeps {
  db: Db;
  env: Env;
  logger: Logger;
  /** The process's outbound client (no server-side request forgery). */
  outbound: OutboundClient;
  now: () => Date;
  /** The service's shared pipeline cache. */
  pipelines: Pick<PipelineCache, "get">;
}

/**
 * Makes the connections' store and service, the handler and the channel of commit statuses, and their background
 * work: credentials sealed under a previous key are rewrapped under the current one at start and hourly, and marks
 * of statuses older than 30 days are removed.
 */
export async function createCommitStatusParts(deps: CommitStatusSetupDeps): Promise<CommitStatusParts> {
  const { env, logger } = deps;
  const { keyRing } = readProvidersConfig(env);
  const { allow } = readOutboundConfig(env);
  const [repository, marks] = await Promise.all([
    createMongoSourceProviderRepository(deps.db),
    createMongoStatusMarkRepository(deps.db),
  ]);
  const providers = createSourceProviders({
    repository,
    keyRing,
    now: deps.now,
    refusedUrl: async (url) => urlRefusal(allow, new URL(url)),
  });
  const url = (service: "builds" | "identity") => env[serviceUrlVar(service)]?.trim() || defaultServiceUrl(service);
  const sources = createRpcStatusSources({
    connections: repository,
    pipelines: deps.pipelines,
    builds: createServiceClient(BuildsService, url("builds")),
    identity: createServiceClient(IdentityService, url("identity")),
    webBaseUrl: env.WEB_URL?.trim() || env.PUBLIC_URL?.trim() || "http://127.0.0.1:8080",
  });
  const call: OutboundCall = (r) =>
    deps.outbound.request(r.url, {
      method: r.method,
      headers: r.headers,
      ...(r.body === undefined ? {} : { body: r.body }),
      signal: r.signal,
    });
  const channel = createCommitStatusChannel({
    connections: repository,
    providers,
    marks,
    now: deps.now,
    call,
    appTokens: createGithubAppTokens({ call, now: deps.now }),
    retryableError: (err) => !isOutboundRefused(err),
  });
  if (!keyRing) logger.warn("CREDENTIALS_ENCRYPTION_KEY is unset: source providers cannot be added or used");
  const sweep = async () => {
    if (keyRing) {
      const { rewrapped, unopened } = await rewrapCredentials(repository, keyRing);
      if (rewrapped > 0) logger.info({ rewrapped }, "source-provider credentials rewrapped under the current key");
      if (unopened.length > 0) {
        logger.warn(
          { connections: unopened },
          "source-provider credentials sealed with a key this process does not hold: add it to CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS",
        );
      }
    }
    await marks.removeOlderThan(new Date(deps.now().getTime() - KEEP_MARKS_MS), 1000);
  };
  const what = "source-provider credentials and status marks";
  // At start (a rotated key is taken up at once), then hourly.
  sweep().catch((err: unknown) => logger.warn({ err }, `${what} failed`));
  repeat(sweep, { what, everyMs: SWEEP_EVERY_MS, logger });
  return {
    providers,
    handler: createCommitStatusHandler(sources),
    channel,
    rpcs: createSourceProvidersRpcs(providers),
  };
}
