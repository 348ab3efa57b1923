import {
  activateByKeyboard,
  focusByKeyboard,
  itInBrowser,
  seriousAccessibilityViolations,
  useBrowser,
} from "../support/browser.js";
import { ciAdminJson } from "../support/ci-admin.js";
import {
  type Account,
  arrangeAccount,
  arrangeWebOrg,
  newPassword,
  setPassword,
  type WebOrg,
} from "../support/web-world.js";

// Signing in as a person does it, in Chromium: with the password an operator set through ci-admin (the wrong one
// first), by keyboard alone, landing on the page that asked for it; signing out; a one-time sign-in link from
// ci-admin that works once. The session cookie's flags are read from the browser (docs/pages.md#signing-in).

jest.setTimeout(90_000);

const browser = useBrowser(__filename);
let org: WebOrg;
let person: Account;

beforeAll(async () => {
  org = await arrangeWebOrg();
  person = await arrangeAccount(org);
  // Replaced through ci-admin, as an operator does: the password arrangeAccount set no longer works.
  person.password = newPassword();
  await setPassword(person, person.password, "ci-admin");
}, 60_000);

/** `ci-admin user login-link` for an email: the link it prints. */
async function loginLink(email: string): Promise<string> {
  // The link is on the pages' address, the stack's (WEB_URL defaults to PUBLIC_URL, as the gateway's does).
  const made = await ciAdminJson("user", "login-link", "--email", email);
  const link = /https?:\/\/\S+\/login\/link\/[\w-]+/.exec(String(made.url))?.[0];
  if (!link) throw new Error(`ci-admin user login-link printed no link: ${JSON.stringify(made)}`);
  return link;
}

itInBrowser("signs in by keyboard with the password set by ci-admin, after a wrong one, and signs out", async () => {
  const alice = await browser.person("alice");
  const orgPage = `/${org.slug}`;
  const page = alice.page;
  // Signed out, the organization's page sends the person to sign in, coming back to it afterwards.
  await alice.open(orgPage, { label: "signed-out" });
  expect(new URL(page.url()).pathname).toBe("/login");
  expect(new URL(page.url()).searchParams.get("next")).toBe(orgPage);

  // A wrong password is answered on the form (401), the email kept, the password not.
  browser.expectProblems((p) => p.kind === "console" && /status of 401/.test(p.detail));
  await page.getByLabel("Email address").fill(person.email);
  await page.getByLabel("Password").fill("not the password");
  await Promise.all([page.waitForLoadState("load"), page.getByRole("button", { name: "Sign in" }).click()]);
  await alice.snap("wrong-password");
  await expect(page.getByRole("alert").textContent()).resolves.toMatch(/\S/);
  await expect(page.getByLabel("Email address").inputValue()).resolves.toBe(person.email);
  await expect(page.getByLabel("Password").inputValue()).resolves.toBe("");

  // The right one, typed and submitted from the keyboard alone.
  await focusByKeyboard(page, page.getByLabel("Password"), { fromTop: true });
  await page.keyboard.type(person.password);
  await Promise.all([page.waitForURL((url) => url.pathname === orgPage), page.keyboard.press("Enter")]);
  await alice.snap("signed-in");
  await expect(page.locator("header .person").textContent()).resolves.toContain(person.name);

  const session = (await alice.context.cookies()).filter((c) => c.httpOnly);
  expect(session).toHaveLength(1);
  expect(session[0]).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/" });

  // Signing out ends the session: the organization's page asks for a sign-in again.
  await Promise.all([
    page.waitForURL((url) => url.pathname === "/login"),
    activateByKeyboard(page, page.getByRole("button", { name: "Sign out" })),
  ]);
  await alice.open(orgPage, { label: "after-sign-out" });
  expect(new URL(page.url()).pathname).toBe("/login");
});

itInBrowser("signs in once with a one-time link from ci-admin; the link then says it can't be used", async () => {
  const link = await loginLink(person.email);
  const bob = await browser.person("bob");
  // Opening the link signs nobody in (a link preview cannot use it up): the page's button does.
  await bob.open(link, { label: "link-opened" });
  await Promise.all([
    bob.page.waitForURL((url) => !url.pathname.startsWith("/login")),
    bob.page.getByRole("button", { name: "Sign in" }).press("Enter"),
  ]);
  expect(new URL(bob.page.url()).pathname).not.toMatch(/^\/login/);
  await expect(bob.page.locator("header .person").textContent()).resolves.toContain(person.name);

  const carol = await browser.person("carol");
  await carol.open(link, { label: "link-opened-again" });
  // The used link's answer is a 410 page, which the browser reports on its console.
  browser.expectProblems((p) => p.kind === "console" && p.detail.includes("status of 410"));
  const [again] = await Promise.all([
    carol.page.waitForResponse((res) => res.request().method() === "POST"),
    carol.page.getByRole("button", { name: "Sign in" }).press("Enter"),
  ]);
  expect(again.status()).toBe(410);
  await carol.snap("link-used-again");
  await expect(carol.page.getByRole("heading", { level: 1 }).textContent()).resolves.toMatch(/can.t be used/);
  await expect(carol.page.locator("header .person").textContent()).resolves.toMatch(/Sign in/);
});

itInBrowser("the sign-in page has no serious or critical accessibility problem", async () => {
  const dave = await browser.person("dave");
  const page = await dave.open("/login");
  expect(await seriousAccessibilityViolations(page)).toEqual([]);
});

itInBrowser("the browser finds the site's icon (no failed /favicon.ico on the pages opened)", async () => {
  const erin = await browser.person("erin");
  await erin.open("/login");
  expect(browser.faviconProblems()).toEqual([]);
});
