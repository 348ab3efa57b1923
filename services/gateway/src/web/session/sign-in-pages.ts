/**
 * The sign-in pages' HTML (docs/pages.md#signing-in): the email and password form, and the answer to a sign-in link
 * that can no longer be used. Both are inside the pages' shell (web/layout.ts).
 */

import type { FastifyRequest } from "fastify";
import { html } from "../html.js";
import { renderPage } from "../layout.js";
import { CSRF_FIELD } from "./csrf.js";

/** What the sign-in form shows: the email typed before, the page to go to, its token, and why the last try failed. */
export interface SignInForm {
  email: string;
  next: string;
  csrfToken: string;
  problem?: string;
}

/** The sign-in page: an email and password form that posts to /login, keeping `next`. */
export function renderSignInPage(request: FastifyRequest, form: SignInForm): string {
  const body = html`<section class="sign-in" aria-labelledby="sign-in-title">
<h1 id="sign-in-title">Sign in</h1>
${form.problem ? html`<div class="form-errors" role="alert"><p>${form.problem}</p></div>` : null}
<form class="stacked" method="post" action="/login">
  <input type="hidden" name="${CSRF_FIELD}" value="${form.csrfToken}">
  <input type="hidden" name="next" value="${form.next}">
  <div class="field">
    <label for="sign-in-email">Email address</label>
    <input id="sign-in-email" name="email" type="email" autocomplete="username" required value="${form.email}">
  </div>
  <div class="field">
    <label for="sign-in-password">Password</label>
    <input id="sign-in-password" name="password" type="password" autocomplete="current-password" required>
  </div>
  <div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>
<p class="notice">No password yet? An administrator can set one (<code>ci-admin user set-password</code>) or give you
a one-time sign-in link (<code>ci-admin user login-link</code>).</p>
</section>`;
  return renderPage(request, { title: "Sign in", body });
}

/**
 * What a one-time sign-in link opens: a button that uses it. Opening the address alone signs nobody in, so a chat
 * app or mail scanner that fetches links to preview them cannot use the link up.
 */
export function renderUseLinkPage(request: FastifyRequest, form: { secret: string; csrfToken: string }): string {
  const body = html`<section class="sign-in" aria-labelledby="link-title">
<h1 id="link-title">Sign in to Conveyor</h1>
<p>This one-time link signs you in. It works once, for a short time.</p>
<form class="stacked" method="post" action="/login/link/${encodeURIComponent(form.secret)}">
  <input type="hidden" name="${CSRF_FIELD}" value="${form.csrfToken}">
  <div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>
</section>`;
  return renderPage(request, { title: "Sign in", body });
}

/** The answer to a sign-in link that was used already, has expired or never existed. */
export function renderUnusableLinkPage(request: FastifyRequest): string {
  const body = html`<section class="error-page" aria-labelledby="link-title">
<h1 id="link-title">This sign-in link can't be used</h1>
<p>A sign-in link works once, for a short time. This one has been used already or has expired.</p>
<p><a href="/login">Sign in with your password</a>, or ask an administrator for a new link.</p>
</section>`;
  return renderPage(request, { title: "Sign-in link", body });
}
