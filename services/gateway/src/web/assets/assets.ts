import { createHash } from "node:crypto";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../../errors/http-error.js";
import { typed } from "../../route-declarations/declare.js";
import { BUILD_PAGE_JS } from "./build-page-js.js";
import { CONVEYOR_CSS } from "./conveyor-css.js";
import { CONVEYOR_JS } from "./conveyor-js.js";
import { FAVICON_SVG } from "./favicon-svg.js";
import { LIVE_JS } from "./live-js.js";

/** A static file the pages link to, served at its content-hashed path. */
export interface Asset {
  name: string;
  contentType: string;
  body: Buffer;
  /** The first 16 hex digits of the body's SHA-256: a new body is a new path, so caches never serve a stale one. */
  hash: string;
  /** Where pages link to it: /assets/<hash>/<name>. */
  path: string;
}

const CONTENT_TYPES: Record<string, string> = {
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  svg: "image/svg+xml",
};

/** The asset `name` with `source` as its body (its content type from its extension). */
export function makeAsset(name: string, source: string): Asset {
  const body = Buffer.from(source, "utf8");
  const hash = createHash("sha256").update(body).digest("hex").slice(0, 16);
  const ext = name.slice(name.lastIndexOf(".") + 1);
  const contentType = CONTENT_TYPES[ext];
  if (!contentType) throw new Error(`asset ${name}: no content type for .${ext}`);
  return { name, contentType, body, hash, path: `/assets/${hash}/${name}` };
}

/** Every asset, by name. A new asset is one more line here. */
export const ASSETS: ReadonlyMap<string, Asset> = new Map(
  [
    makeAsset("conveyor.css", CONVEYOR_CSS),
    makeAsset("conveyor.js", CONVEYOR_JS),
    makeAsset("favicon.svg", FAVICON_SVG),
    makeAsset("build-page.js", BUILD_PAGE_JS),
    makeAsset("live.js", LIVE_JS),
  ].map((a) => [a.name, a]),
);

/** The path a page links to for the asset `name` (throws for an unknown name: a typo fails every test of the page). */
export function assetPath(name: string): string {
  const asset = ASSETS.get(name);
  if (!asset) throw new Error(`no asset named ${name}`);
  return asset.path;
}

/** A year: the longest cache lifetime browsers honour. A hashed path's body never changes. */
const IMMUTABLE = "public, max-age=31536000, immutable";

/**
 * GET /assets/:hash/:name. The current hash is cached for a year. Another hash (a page rendered by a gateway of
 * another version during a rolling upgrade) still gets the current body, so the page works, but not cached, so the
 * old path never holds the new body for long. An unknown name is 404.
 */
export function registerAssets(scope: FastifyInstance): void {
  typed(scope).get(
    "/assets/:hash/:name",
    { schema: { params: Type.Object({ hash: Type.String({ maxLength: 64 }), name: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      const asset = ASSETS.get(request.params.name);
      if (!asset) throw new HttpError(404, "No asset found");
      const current = asset.hash === request.params.hash;
      reply.header("content-type", asset.contentType);
      reply.header("cache-control", current ? IMMUTABLE : "no-cache");
      reply.header("etag", `"${asset.hash}"`);
      if (request.headers["if-none-match"] === `"${asset.hash}"`) return reply.status(304).send();
      return reply.send(asset.body);
    },
  );
}
