/**
 * The answer cache: HTTP answers (the JSON of a build or a page of builds, as sent) kept by the gateway and served
 * again when the builds service confirms them current. (The JSON views themselves are made in render/.)
 *
 * A build or a page of builds is rendered from two things: the builds service's answer, which it names by a content
 * version (a hash of what it sent), and the gateway's own inputs (the organization's slug, the embedded pipelines as
 * they are now, whether the caller may edit them, the query's options). The gateway keeps the JSON it sent, under
 * the request's key, with both. The next request for the same key asks the builds service with `if_none_match` set
 * to the kept version: when the service answers not_modified (after its own freshness barrier) and the inputs are
 * the same, the kept JSON is sent as it is, which skips encoding, decoding, rendering and serializing the builds
 * (a page of 30 is ~230 KB). Nothing is served on the gateway's word alone: every answer is confirmed by the builds
 * service in the request that sends it.
 *
 * The same pair names the answer for HTTP: its ETag, so that a client that sends If-None-Match gets 304.
 *
 * A client that accepts gzip (Go's HTTP client, and so go-buildkite and the `bk` CLI, asks for it by default) gets
 * the kept JSON gzipped: compressed once per kept answer, off the event loop, and kept beside it, so a poller of a
 * page of 30 builds is sent ~16 KB instead of ~230 KB at no CPU cost per request. Like nginx, the gzipped variant
 * carries the ETag as a weak one (`W/"…"`); If-None-Match compares either form.
 */
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import { toBinary } from "@bufbuild/protobuf";
import { type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import { contentVersion } from "@conveyor/runtime";
import { Negotiator } from "@fastify/accept-negotiator";
import type { FastifyReply, FastifyRequest } from "fastify";
import { LRUCache } from "lru-cache";

/** What is kept of one answer. */
export interface KeptAnswer {
  /** The builds service's version of what the answer was rendered from. */
  version: string;
  /** The gateway's inputs to the rendering known before the call (see `inputsOf`). */
  inputs: string;
  /** The JSON sent. */
  body: Buffer;
  /** The entity tag sent with it. */
  etag: string;
  /** The Link header sent with it (pages). */
  link?: string;
  /** Inputs that depended on the service's answer (an organization page's pipelines), for `confirm`. */
  depends?: unknown;
  /** The body gzipped, once a client that accepts gzip asked for it (see `gzipped`). */
  gzip?: Promise<Buffer>;
  /** Its size, once made (counted in the cache's size). */
  gzipBytes?: number;
}

/** What the builds service answered: a version, and the value unless it said the caller's is current. */
export interface Fetched<T> {
  version: string;
  notModified: boolean;
  /** Absent when not_modified (or when the service found nothing, for `render` to say so). */
  value?: T | undefined;
}

/** One answer to serve: how to fetch it, confirm a kept one and render a new one. */
export interface AnswerSpec<T> {
  /** Everything that selects the service's answer (the RPC request, the URL). */
  key: string;
  /** Everything of the gateway's that the rendering reads, known before the call. */
  inputs: string;
  /** The RPC, with the version of the kept answer ("" for none). */
  fetch(ifNoneMatch: string): Promise<Fetched<T>>;
  /** Whether inputs read from the answer (its `depends`) are still as they were. */
  confirm?(depends: unknown): Promise<boolean>;
  /** Renders a value: the body (serialized by the route's schema), its Link header and what it depended on. */
  render(
    value: T | undefined,
  ): Promise<{ body: unknown; link?: string; depends?: unknown }> | { body: unknown; link?: string };
}

const pipelineVersions = new WeakMap<Pipeline, string>();

/**
 * A pipeline's content version. The gateway's pipeline cache hands out the same object until the pipeline changes,
 * so this is computed once per change.
 */
export function pipelineVersion(pipeline: Pipeline): string {
  let version = pipelineVersions.get(pipeline);
  if (!version) {
    version = contentVersion(toBinary(PipelineSchema, pipeline));
    pipelineVersions.set(pipeline, version);
  }
  return version;
}

/** The gateway's inputs to a rendering, as one string: equal strings, equal renderings of equal service answers. */
export function inputsOf(parts: readonly (string | number | boolean)[]): string {
  return parts.map(String).join("|");
}

/** Whether the request's If-None-Match names `etag` (a list, a weak tag or `*`). */
function matches(request: FastifyRequest, etag: string): boolean {
  const header = request.headers["if-none-match"];
  if (!header) return false;
  if (header.trim() === "*") return true;
  return header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === `"${etag}"`);
}

export interface AnswerCache {
  /**
   * Serves an answer: the kept one when the service confirms its version (and `confirm` the inputs that depended
   * on it), else a new rendering, kept for next time. 304 when the request's If-None-Match names the answer.
   */
  serve<T>(request: FastifyRequest, reply: FastifyReply, spec: AnswerSpec<T>): Promise<FastifyReply>;
  /** How much is kept (for tests and /stats). */
  size(): { entries: number; bytes: number };
}

const JSON_TYPE = "application/json; charset=utf-8";

/** Bodies smaller than this are sent as they are: gzip would save less than its own framing and a round of work. */
export const GZIP_MIN_BYTES = 1024;

const gzipAsync = promisify(gzip);

/** Accept-Encoding values seen, with what they chose: few distinct ones, bounded all the same. */
const encodings = new Negotiator({
  supportedValues: ["gzip", "identity"],
  cache: new LRUCache<string, string>({ max: 256 }),
});

/** Whether the request accepts a gzipped body (Accept-Encoding names gzip or `*`, with a weight above 0). */
export function acceptsGzip(request: FastifyRequest): boolean {
  const header = request.headers["accept-encoding"];
  return typeof header === "string" && header !== "" && encodings.negotiate(header) === "gzip";
}

/** What a route's serializer produced, as bytes to keep. */
const bytesOf = (serialized: string | Buffer | ArrayBuffer) =>
  typeof serialized === "string" ? Buffer.from(serialized) : Buffer.from(serialized as Uint8Array);

/** Answers kept up to `maxBytes` of JSON (0 keeps nothing: every request renders; ETags still work). */
export function createAnswerCache(opts: { maxBytes: number; gzipMinBytes?: number }): AnswerCache {
  const gzipMinBytes = opts.gzipMinBytes ?? GZIP_MIN_BYTES;
  const cache =
    opts.maxBytes > 0
      ? new LRUCache<string, KeptAnswer>({
          maxSize: opts.maxBytes,
          sizeCalculation: (answer, key) => answer.body.length + (answer.gzipBytes ?? 0) + key.length + 200,
        })
      : undefined;

  /** The answer's body gzipped: made once (in libuv's thread pool), then kept with it and counted in its size. */
  const gzipped = (key: string, answer: KeptAnswer): Promise<Buffer> => {
    answer.gzip ??= gzipAsync(answer.body).then(
      (bytes) => {
        answer.gzipBytes = bytes.length;
        // Counted again at its new size, if it is still the kept answer (the cache sizes a new value only).
        if (cache?.peek(key) === answer) cache.set(key, { ...answer });
        return bytes;
      },
      (err: unknown) => {
        // Not kept: the next request tries again.
        answer.gzip = undefined;
        throw err;
      },
    );
    return answer.gzip;
  };

  const send = async (request: FastifyRequest, reply: FastifyReply, key: string, answer: KeptAnswer) => {
    if (answer.link) reply.header("link", answer.link);
    const compressible = answer.body.length >= gzipMinBytes;
    if (compressible) reply.header("vary", "accept-encoding");
    const gzip = compressible && acceptsGzip(request);
    if (answer.version !== "") {
      reply.header("etag", gzip ? `W/"${answer.etag}"` : `"${answer.etag}"`);
      if (matches(request, answer.etag)) return reply.code(304).send();
    }
    reply.header("content-type", JSON_TYPE);
    if (!gzip) return reply.send(answer.body);
    return reply.header("content-encoding", "gzip").send(await gzipped(key, answer));
  };

  /** Renders the service's answer and keeps it (when it names a version). */
  const renderAndKeep = async <T>(reply: FastifyReply, spec: AnswerSpec<T>, fetched: Fetched<T>) => {
    const rendered = await spec.render(fetched.value);
    const version = fetched.version ?? "";
    const answer: KeptAnswer = {
      version,
      inputs: spec.inputs,
      body: bytesOf(reply.serialize(rendered.body)),
      etag: contentVersion(version, spec.inputs, "depends" in rendered ? (JSON.stringify(rendered.depends) ?? "") : ""),
      ...(rendered.link ? { link: rendered.link } : {}),
      ...("depends" in rendered ? { depends: rendered.depends } : {}),
    };
    // A service that sent no version (an older replica during a rolling upgrade) names nothing worth keeping.
    if (version !== "") cache?.set(spec.key, answer);
    return answer;
  };

  /**
   * Renderings under way, by key and inputs. A request arriving meanwhile waits for it and then asks the service
   * with its version: after a change, twenty pollers of one page cost one rendering and nineteen confirmations,
   * not twenty renderings. Each still gets its own confirmation, made after it arrived, so none is answered older.
   */
  const rendering = new Map<string, Promise<void>>();

  return {
    async serve(request, reply, spec) {
      const flight = `${spec.key}\u0000${spec.inputs}`;
      // Resolves only (never rejects), whatever the rendering it waits for came to.
      const under = cache ? rendering.get(flight) : undefined;
      if (under) await under;
      const held = cache?.get(spec.key);
      const kept = held && held.inputs === spec.inputs ? held : undefined;
      let fetched = await spec.fetch(kept?.version ?? "");
      if (fetched.notModified) {
        if (kept && kept.version === fetched.version && (!spec.confirm || (await spec.confirm(kept.depends)))) {
          return send(request, reply, spec.key, kept);
        }
        // The kept answer went meanwhile, or what it depended on changed: ask again for the builds themselves.
        fetched = await spec.fetch("");
      }
      // From here until the new answer is kept, requests for the same key wait for it (see `rendering`).
      let finished: (() => void) | undefined;
      if (cache && !rendering.has(flight)) {
        rendering.set(flight, new Promise<void>((resolve) => (finished = resolve)));
      }
      try {
        return await send(request, reply, spec.key, await renderAndKeep(reply, spec, fetched));
      } finally {
        if (finished) {
          rendering.delete(flight);
          finished();
        }
      }
    },

    size: () => ({ entries: cache?.size ?? 0, bytes: cache?.calculatedSize ?? 0 }),
  };
}
