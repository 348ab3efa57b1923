import type { FastifyInstance } from "fastify";

/** Query parameters whose values are credentials: an access token sent in the URL, a signed URL's signature. */
const SECRET_PARAM = /token|secret|signature|credential|password|key/i;

/**
 * A path whose last segment is a secret: a one-time sign-in link of the pages (docs/pages.md#signing-in), and a
 * pipeline's webhook URL (docs/webhooks.md), whose token is what authenticates a delivery.
 */
const SECRET_PATH = /^(\/login\/link\/|\/webhooks\/deliver\/)[^/?#]+/;

/** A query parameter's name decoded; a malformed percent-encoding (URIError) is judged as written. */
function decodedName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch (err) {
    if (err instanceof URIError) return name;
    throw err;
  }
}

/**
 * A request URL as the request log writes it: the values of credential-like query parameters are replaced by
 * `[redacted]` (clients sometimes pass `?access_token=`; the object proxy's URLs carry signatures), and so are a
 * sign-in link's secret and a webhook URL's token.
 */
export function urlForLog(rawUrl: string): string {
  const url = rawUrl.replace(SECRET_PATH, "$1[redacted]");
  const at = url.indexOf("?");
  if (at < 0) return url;
  const parts = url
    .slice(at + 1)
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return eq >= 0 && SECRET_PARAM.test(decodedName(name)) ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, at)}?${parts.join("&")}`;
}

/** Logs one line per answered request (method, redacted URL, status, milliseconds), in the request's context. */
export function registerRequestLog(app: FastifyInstance): void {
  app.addHook("onResponse", async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        url: urlForLog(request.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      "request",
    );
  });
}
