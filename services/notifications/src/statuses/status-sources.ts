import { Code, ConnectError } from "@connectrpc/connect";
import { type BuildContext, evaluateCondition } from "@conveyor/ci-rules";
import type { Build, BuildsService } from "@conveyor/proto/builds";
import type { IdentityService } from "@conveyor/proto/identity";
import type { Client } from "@conveyor/runtime";
import type { PipelineCache } from "../cache/pipeline-cache.js";
import type { SourceProviderRepository } from "../providers/source-provider-repository.js";
import type { StatusPipeline, StatusSources } from "./commit-status-handler.js";

/** How long an organization's connections are used again; organizations' slugs are kept longer. */
const FRESH_MS = 5_000;
const SLUG_FRESH_MS = 60_000;
/** Entries each cache keeps at most. */
const MAX_ENTRIES = 2_000;

/** A small cache with a lifetime per entry and a bound on its size (the oldest entry goes first). */
function ttlCache<V>(ttlMs: number, now: () => number) {
  const entries = new Map<string, { value: Promise<V>; until: number }>();
  return async (key: string, load: () => Promise<V>): Promise<V> => {
    const hit = entries.get(key);
    if (hit && hit.until > now()) return hit.value;
    const value = load();
    entries.delete(key);
    entries.set(key, { value, until: now() + ttlMs });
    if (entries.size > MAX_ENTRIES) entries.delete(entries.keys().next().value as string);
    // A failed read is not kept.
    value.catch(() => entries.delete(key));
    return value;
  };
}

const missing = (err: unknown) => err instanceof ConnectError && err.code === Code.NotFound;

export interface RpcStatusSourcesDeps {
  connections: Pick<SourceProviderRepository, "list">;
  /** The service's shared pipeline cache (docs/notifications.md#what-the-handlers-read). */
  pipelines: Pick<PipelineCache, "get">;
  builds: Client<typeof BuildsService>;
  identity: Client<typeof IdentityService>;
  /** The base of `web_url` fields (WEB_URL, else PUBLIC_URL, as the gateway's). */
  webBaseUrl: string;
  now?: () => number;
}

/**
 * The handler's reads over RPC: the organization's connections (its own database, kept a few seconds so that a
 * build's burst of events costs a few reads), the pipeline (the shared pipeline cache, with its YAML's
 * github_commit_status entries read once per change), a job's build (builds service) and the organization's slug for
 * `web_url` (identity). A pipeline or build that is gone reads as null.
 */
export function createRpcStatusSources(deps: RpcStatusSourcesDeps): StatusSources {
  const now = deps.now ?? Date.now;
  const connections = ttlCache<Awaited<ReturnType<StatusSources["connections"]>>>(FRESH_MS, now);
  const slugs = ttlCache<string>(SLUG_FRESH_MS, now);
  const base = deps.webBaseUrl.replace(/\/+$/, "");
  const slugOf = (organizationId: string) =>
    slugs(organizationId, async () => {
      const { organization } = await deps.identity.getOrganization({ id: organizationId });
      return organization?.slug ?? organizationId;
    });
  return {
    connections: (organizationId) => connections(organizationId, () => deps.connections.list(organizationId)),
    async pipeline(organizationId, pipelineId) {
      const cached = await deps.pipelines.get(organizationId, pipelineId);
      if (!cached) return null;
      const { pipeline, rules } = cached;
      return {
        slug: pipeline.slug,
        defaultBranch: pipeline.defaultBranch,
        repository: pipeline.repository,
        providerSettings: (pipeline.provider?.settings ?? {}) as Record<string, unknown>,
        notify: rules.commitStatuses,
      };
    },
    async build(pipelineId, number) {
      try {
        return (await deps.builds.getBuild({ pipelineId, number })).build ?? null;
      } catch (err) {
        if (missing(err)) return null;
        throw err;
      }
    },
    async webUrl(organizationId, pipelineSlug, number) {
      return `${base}/${await slugOf(organizationId)}/${pipelineSlug}/builds/${number}`;
    },
    async conditionHolds(build, pipeline, condition) {
      const result = evaluateCondition(condition, buildContextOf(build, pipeline, await slugOf(build.organizationId)));
      return result.ok && result.value;
    },
  };
}

/** What a notification's `if:` sees of a build (the conditionals' variables, as when the build was created). */
export function buildContextOf(build: Build, pipeline: StatusPipeline, organizationSlug: string): BuildContext {
  const pr = build.pullRequest;
  return {
    id: build.id,
    number: build.number,
    branch: build.branch,
    state: build.state,
    commit: build.commit,
    message: build.message,
    source: build.source,
    sourceEvent: build.sourceEvent || null,
    sourceAction: build.sourceAction || null,
    tag: build.tag || null,
    env: build.env,
    pullRequest:
      pr && pr.id !== ""
        ? {
            id: pr.id,
            baseBranch: pr.base || null,
            draft: pr.draft ?? null,
            labels: pr.labels,
            repository: pr.repository || null,
            fork: pr.fork ?? null,
          }
        : null,
    creator: build.creator ? { id: build.creator.id, name: build.creator.name, email: build.creator.email } : null,
    author: build.author ? { name: build.author.name, email: build.author.email } : null,
    pipeline: { slug: pipeline.slug, defaultBranch: pipeline.defaultBranch, id: build.pipelineId },
    organization: { slug: organizationSlug, id: build.organizationId },
  };
}
