import { createHash } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { createSecretCache } from "../../auth/secret-cache.js";
import type { GatewayClients } from "../../clients/gateway-clients.js";
import { typed } from "../../route-declarations/declare.js";
import { BOUNDS, text } from "../../route-declarations/params.js";
import { type BadgeStatus, badgeStatus, badgeSvg } from "./badge-svg.js";

/** What a badge needs of its pipeline, kept by token. */
interface BadgePipeline {
  id: string;
  organizationId: string;
  defaultBranch: string;
}

/** How long a token's pipeline is remembered: a badge is fetched on every view of a README that shows it. */
const TOKEN_TTL_MS = 60_000;
/** How long browsers and proxies may keep a badge: its state is at most this much behind. */
const CACHE_CONTROL = "public, max-age=30";

/** The SVG of each status, made once. */
const SVGS = new Map<BadgeStatus, string>(
  (["passing", "failing", "running", "unknown"] as const).map((s) => [s, badgeSvg(s)]),
);
const ETAGS = new Map<BadgeStatus, string>(
  [...SVGS].map(([s, svg]) => [s, `"${createHash("sha256").update(svg).digest("base64url").slice(0, 16)}"`]),
);

/**
 * GET /badges/{token}.svg: a pipeline's status badge (render/urls.ts's badge_url), public to whoever has the URL,
 * whose token is unguessable. It says one word, the state of the latest build of the pipeline's default branch (or
 * of `?branch=`), and nothing else of the pipeline. Token lookups are cached for a minute (a README's badge is
 * fetched on every view); the build's state is one ListBuilds of one build, which the builds service answers from
 * its read cache. Browsers may keep it 30 seconds, and revalidate with its ETag.
 *
 * An unknown token answers 404 with the "unknown" badge: the image still reads as a badge where it is shown, and a
 * checker of links learns that this URL is wrong. A real token tells nothing more by its 200 than the URL's holder
 * already has.
 */
export function registerBadges(scope: FastifyInstance, clients: Pick<GatewayClients, "pipelines" | "builds">): void {
  const pipelines = createSecretCache<BadgePipeline>(
    async (token) => {
      try {
        const { pipeline } = await clients.pipelines.getPipelineByBadgeToken({ badgeToken: token });
        if (!pipeline) return null;
        return { id: pipeline.id, organizationId: pipeline.organizationId, defaultBranch: pipeline.defaultBranch };
      } catch (err) {
        if (err instanceof ConnectError && err.code === Code.NotFound) return null;
        throw err;
      }
    },
    { ttlMs: TOKEN_TTL_MS },
  );

  typed(scope).get(
    "/badges/:file",
    {
      schema: {
        params: Type.Object({ file: Type.String({ maxLength: 200 }) }),
        querystring: Type.Object({ branch: Type.Optional(text(BOUNDS.ref)) }),
      },
    },
    async (request, reply) => {
      const match = /^([A-Za-z0-9_-]{1,128})\.svg$/.exec(request.params.file);
      const pipeline = match?.[1] ? await pipelines.get(match[1]) : null;
      let status: BadgeStatus = "unknown";
      if (pipeline) {
        const branch = request.query.branch ?? pipeline.defaultBranch;
        const res = await clients.builds.listBuilds({
          organizationIds: [pipeline.organizationId],
          pipelineId: pipeline.id,
          branches: branch ? [branch] : [],
          page: 1,
          perPage: 1,
          excludeJobs: true,
        });
        status = badgeStatus(res.builds[0]?.state);
      }
      const etag = ETAGS.get(status) as string;
      reply
        .status(pipeline ? 200 : 404)
        .header("content-type", "image/svg+xml; charset=utf-8")
        .header("cache-control", CACHE_CONTROL)
        .header("etag", etag);
      if (pipeline && request.headers["if-none-match"] === etag) return reply.status(304).send();
      return reply.send(SVGS.get(status));
    },
  );
}
