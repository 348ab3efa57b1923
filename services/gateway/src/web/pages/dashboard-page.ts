import type { FastifyInstance } from "fastify";
import { html } from "../html.js";
import { renderPage } from "../layout.js";
import { orgPath } from "../paths.js";
import type { WebDeps } from "../web-deps.js";

/**
 * GET /dashboard: where "/" sends a browser and the brand links to. A signed-in person goes to their first
 * organization (by name), a signed-out one to sign in; a person in no organization is told so.
 */
export function dashboardPage(scope: FastifyInstance, deps: Pick<WebDeps, "requireSignIn">): void {
  scope.get("/dashboard", { preHandler: deps.requireSignIn }, async (request, reply) => {
    const orgs = (request.principal?.organizations ?? [])
      .flatMap((a) => (a.organization ? [a.organization] : []))
      .sort((a, b) => a.name.localeCompare(b.name));
    const first = orgs[0];
    if (first) return reply.redirect(orgPath(first.slug), 302);
    const body = html`<h1>No organizations</h1>
<p class="notice">You are not a member of any organization yet. Ask an administrator to add you
(<code>ci-admin member add</code>).</p>`;
    return reply.type("text/html; charset=utf-8").send(renderPage(request, { title: "Dashboard", body }));
  });
}
