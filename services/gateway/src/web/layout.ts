import type { FastifyRequest } from "fastify";
import { assetPath } from "./assets/assets.js";
import { type HtmlValue, html, type SafeHtml } from "./html.js";
import { agentsPath, orgPath } from "./paths.js";
import { csrfField } from "./session/csrf.js";

// The shell's first version declared these here; their home is paths.ts with the other pages' paths.
export { agentsPath, orgPath };

/** The organization a page belongs to: the switcher marks it, the navigation links within it. */
export interface PageOrganization {
  slug: string;
  name: string;
}

/** What a page puts in the shell. */
export interface PageOptions {
  /** The page's own title (the document's title adds " · Conveyor"). */
  title: string;
  org?: PageOrganization;
  /** The navigation entry the page is under. */
  section?: "pipelines" | "agents";
  /** The content of <main>. */
  body: SafeHtml;
  /** More scripts (asset names, e.g. "live.js") after conveyor.js, each with the answer's nonce. */
  scripts?: readonly string[];
}

/** The organizations the signed-in person belongs to, by name. */
function organizationsOf(request: FastifyRequest): PageOrganization[] {
  const orgs = request.principal?.organizations ?? [];
  return orgs
    .flatMap((a) => (a.organization ? [{ slug: a.organization.slug, name: a.organization.name }] : []))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The organization switcher: a disclosure listing the person's organizations (works without script). */
function orgSwitcher(request: FastifyRequest, current: PageOrganization | undefined): HtmlValue {
  const orgs = organizationsOf(request);
  if (orgs.length === 0) return null;
  const label = current?.name ?? "Organizations";
  return html`<details class="org-switcher">
      <summary><span class="visually-hidden">Organization: </span>${label}</summary>
      <ul>
        ${orgs.map(
          (o) =>
            html`<li><a href="${orgPath(o.slug)}"${o.slug === current?.slug ? html` aria-current="true"` : ""}>${o.name}</a></li>`,
        )}
      </ul>
    </details>`;
}

function nav(org: PageOrganization | undefined, section: PageOptions["section"]): HtmlValue {
  if (!org) return null;
  const item = (name: PageOptions["section"], href: string, text: string) =>
    html`<li><a href="${href}"${section === name ? html` aria-current="page"` : ""}>${text}</a></li>`;
  return html`<nav class="site-nav" aria-label="${org.name}">
      <ul>${item("pipelines", orgPath(org.slug), "Pipelines")}${item("agents", agentsPath(org.slug), "Agents")}</ul>
    </nav>`;
}

/** The signed-in person and the sign-out button, or the sign-in link. */
function person(request: FastifyRequest): HtmlValue {
  const user = request.principal?.user;
  if (!user) return html`<div class="person"><a href="/login">Sign in</a></div>`;
  return html`<div class="person">
      <span>${user.name}</span>
      <form method="post" action="/logout">${csrfField(request)}<button type="submit">Sign out</button></form>
    </div>`;
}

/**
 * The page shell every page answers with: a skip link, the header (brand, organization switcher, navigation, the
 * person), <main> with the page's content, and the footer. The stylesheet and scripts are our own hashed assets;
 * every script tag carries the answer's CSP nonce (web/security-headers.ts).
 */
export function renderPage(request: FastifyRequest, page: PageOptions): string {
  const nonce = request.cspNonce ?? "";
  const scripts = ["conveyor.js", ...(page.scripts ?? [])];
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.title} · Conveyor</title>
<link rel="icon" href="${assetPath("favicon.svg")}" type="image/svg+xml">
<link rel="stylesheet" href="${assetPath("conveyor.css")}">
${scripts.map((s) => html`<script src="${assetPath(s)}" nonce="${nonce}" defer></script>`)}
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header">
  <a class="brand" href="/dashboard">Conveyor</a>
  ${orgSwitcher(request, page.org)}
  ${nav(page.org, page.section)}
  ${person(request)}
</header>
<main id="main" tabindex="-1">
${page.body}
</main>
<footer class="site-footer">
  <p>Conveyor, a self-hosted CI service that speaks Buildkite's API. <a href="/v2/openapi.json">REST API</a></p>
</footer>
</body>
</html>
`.value;
}
