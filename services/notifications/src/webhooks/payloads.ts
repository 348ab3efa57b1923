import type { Client } from "@connectrpc/connect";
import type { BuildsService } from "@conveyor/proto/builds";
import type { IdentityService } from "@conveyor/proto/identity";
import type { Pipeline } from "@conveyor/proto/pipelines";
import {
  buildApiUrl,
  createUrls,
  renderAgent,
  renderBuild,
  renderJob,
  renderPipeline,
  type Urls,
} from "@conveyor/rest-render";
import type { PipelineCache } from "../cache/pipeline-cache.js";
import type { NotificationEvent } from "../events/notification-event.js";

/**
 * The bodies of Buildkite's notification webhooks (docs/notifications.md#bodies): `{event, build, pipeline, sender}`
 * with the build as REST renders it without jobs, plus `job` for job events; `{event, agent, sender}` for agent
 * events. Rendered when the event is recorded, so every attempt sends the same bytes. The pipeline is rendered as
 * to a caller who may not edit it (no webhook URL or secret).
 */
export interface Payloads {
  body(event: NotificationEvent, name: string): Promise<Record<string, unknown> | null>;
}

export interface PayloadDeps {
  identity: Pick<Client<typeof IdentityService>, "getOrganization">;
  /** The shared pipeline cache. */
  pipelines: Pick<PipelineCache, "get">;
  builds: Pick<Client<typeof BuildsService>, "getBuild">;
  publicUrl: string;
  webUrl: string;
}

export function createPayloads(deps: PayloadDeps): Payloads {
  const urls: Urls = createUrls(deps.publicUrl, deps.webUrl);
  const orgSlugs = new Map<string, string>();
  const orgSlug = async (id: string) => {
    let slug = orgSlugs.get(id);
    if (slug === undefined) {
      slug = (await deps.identity.getOrganization({ id })).organization?.slug ?? "";
      if (orgSlugs.size >= 10_000) orgSlugs.clear();
      orgSlugs.set(id, slug);
    }
    return slug;
  };
  // A deleted pipeline is null (the body says so); a failed read throws, so the event is handled again later
  // rather than announced without its pipeline.
  const pipelineOf = async (organizationId: string, id: string): Promise<Pipeline | null> =>
    (await deps.pipelines.get(organizationId, id))?.pipeline ?? null;

  return {
    async body(event, name) {
      if (event.type === "agent") {
        const slug = await orgSlug(event.agent.organizationId);
        return { event: name, agent: renderAgent(event.agent, { urls, orgSlug: slug }), sender: null };
      }
      const organizationId = event.type === "build" ? event.build.organizationId : event.organizationId;
      const pipelineId = event.type === "build" ? event.build.pipelineId : event.pipelineId;
      const [slug, pipeline] = await Promise.all([orgSlug(organizationId), pipelineOf(organizationId, pipelineId)]);
      const build =
        event.type === "build"
          ? event.build
          : (await deps.builds.getBuild({ pipelineId, number: event.buildNumber })).build;
      if (!build) return null;
      const view = { urls, orgSlug: slug, pipeline, canEdit: false, detail: "single" as const };
      const body: Record<string, unknown> = {
        event: name,
        build: renderBuild(build, view, { excludeJobs: true }),
        pipeline: pipeline ? renderPipeline(pipeline, { urls, orgSlug: slug, canEdit: false }) : null,
        sender: build.creator?.id ? { id: build.creator.id, name: build.creator.name } : null,
      };
      if (event.type === "job") {
        const pipelineSlug = pipeline?.slug || build.pipelineSlug;
        const api = buildApiUrl(urls, slug, pipelineSlug, build.number);
        const web = urls.web(`${slug}/${pipelineSlug}/builds/${build.number}`);
        body.job = renderJob(event.job, { urls, orgSlug: slug, api, web }, "single");
      }
      return body;
    },
  };
}
