import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { toErrorReply } from "../errors/error-handler.js";
import { html } from "./html.js";
import { renderPage } from "./layout.js";
import { newNonce, securityHeaders } from "./security-headers.js";

/** The heading and the sentence of each error page, by status; other statuses take their class's (4xx or 5xx). */
const PAGES: Record<number, { title: string; text: string }> = {
  400: { title: "Bad request", text: "The request could not be understood. Check the address and try again." },
  403: { title: "Forbidden", text: "You don't have permission to do that." },
  404: { title: "Page not found", text: "There's nothing here, or you don't have access to it." },
  405: { title: "Method not allowed", text: "That address does not take this kind of request." },
  413: { title: "Too large", text: "The request was larger than the server accepts." },
  429: { title: "Too many requests", text: "Slow down a little, then try again." },
  500: { title: "Something went wrong", text: "The server could not answer. The error has been logged." },
  503: { title: "Service unavailable", text: "A service this page needs is unavailable. Please try again shortly." },
  504: { title: "Timed out", text: "A service this page needs took too long to answer. Please try again shortly." },
};

function pageOf(status: number) {
  return PAGES[status] ?? (status >= 500 ? (PAGES[500] as { title: string; text: string }) : PAGES[400]);
}

/**
 * The styled page of an error status. A 4xx may say what was not found (`detail`, a message this code wrote, such
 * as "No pipeline found"); a 5xx never shows its cause, which is logged instead.
 */
export function renderErrorPage(request: FastifyRequest, status: number, detail?: string): string {
  const page = pageOf(status) as { title: string; text: string };
  const body = html`<section class="error-page" aria-labelledby="error-title">
  <p class="status">${status}</p>
  <h1 id="error-title">${page.title}</h1>
  <p>${status < 500 && detail ? detail : page.text}</p>
  <p><a href="/dashboard">Back to your dashboard</a></p>
</section>`;
  return renderPage(request, { title: page.title, body });
}

/**
 * The web scope's error handler: every error of a page or an action answers with its styled page, never JSON. The
 * status is the one the REST API would give (errors/error-handler.ts's toErrorReply), so access answers match:
 * what the person may not see is 404, what they may not do is 403.
 */
export function registerErrorPages(scope: FastifyInstance): void {
  scope.setErrorHandler((err, request, reply) => {
    const { status, body } = toErrorReply(err);
    if (status >= 500) request.log.error({ err }, "page failed");
    else request.log.debug({ err: err instanceof Error ? err.message : err, status }, "page client error");
    const detail = typeof body.message === "string" ? body.message : undefined;
    return reply
      .status(status)
      .type("text/html; charset=utf-8")
      .send(renderErrorPage(request, status, status === 404 || status === 403 ? detail : undefined));
  });
}

/** First path segments of the APIs (and their neighbours) whose unknown URLs keep the REST API's JSON 404. */
const API_SEGMENTS = new Set(["v1", "v2", "v3", "objects", "healthz", "webhooks"]);

/** Whether a path belongs to an API rather than the pages (its first segment is an API's). */
export function isApiPath(url: string): boolean {
  const first = url.split(/[/?#]/, 2)[1] ?? "";
  return API_SEGMENTS.has(first);
}

/**
 * Whether an unknown URL should be answered with the 404 page rather than the API's JSON: a GET or HEAD outside the
 * APIs from a client that asks for HTML (a browser). Other clients keep the JSON 404 they always had.
 */
export function wantsPage(request: FastifyRequest): boolean {
  if (request.method !== "GET" && request.method !== "HEAD") return false;
  if (isApiPath(request.url)) return false;
  return (request.headers.accept ?? "").includes("text/html");
}

/**
 * The 404 page for an unknown URL outside the web scope (the app's not-found handler asks, errors/error-handler.ts):
 * it carries the security headers itself, since the web scope's hooks did not run for it.
 */
export function sendNotFoundPage(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  request.cspNonce = newNonce();
  return reply
    .status(404)
    .headers(securityHeaders(request.cspNonce))
    .type("text/html; charset=utf-8")
    .send(renderErrorPage(request, 404));
}
