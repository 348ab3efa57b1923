import type { FastifyInstance } from "fastify";

/**
 * The gateway takes JSON bodies only, app-wide: anything else is a 415, not a string handed to a route, and an empty
 * body sent as `Content-Type: application/json` is no body (scripts often send the header on every request,
 * bodyless DELETEs included, and Buildkite's API takes that) rather than a JSON parse error. It is set on the app
 * itself, not only in the REST scope, because Fastify parses the body of a request to an unknown URL before
 * answering 404 with the app's handler, so those answers depend on it too. The agent API adds the raw bodies of log
 * chunks in its own scope (agent-api/agent-api.ts); the object store proxy takes bodies as streams in its own.
 */
export function registerJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser("text/plain");
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = body.toString();
    if (text.trim() === "") return done(null, undefined);
    return parseJson(request, text, done);
  });
}
