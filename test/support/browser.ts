import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { itRequires, type Precondition } from "./not-run.js";
import { stack } from "./stack-env.js";

// The browser suites (test/browser) open the pages in Debian's Chromium through playwright-core: one browser per
// suite, one context (its own cookies) per person. Every page a person opens is screenshotted under
// .test-results/screenshots/<suite>/, and whatever the page does wrong (a JavaScript error, a console error, a
// Content-Security-Policy violation, a dialog, a script injected by a user's text) is collected and fails the test
// it happened in (docs/pages.md#browser-tests).

const repoRoot = join(__dirname, "..", "..");

// The functions passed to page.evaluate run in the browser; the test project is typed for Node (no DOM library,
// whose globals clash with Node's), so the few browser globals they use are declared here, for this module only.
// biome-ignore lint/suspicious/noExplicitAny: the browser's DOM, untyped in a Node project.
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: as above.
declare const window: any;
// biome-ignore lint/suspicious/noExplicitAny: as above.
declare const location: any;
/** The little of a DOM element the DOM scan reads. */
interface Element {
  tagName: string;
  outerHTML: string;
  nonce?: string;
  attributes: ArrayLike<{ name: string; value: string }>;
  getAttribute(name: string): string | null;
}

/** Debian's Chromium, which `npm test` installs when missing (scripts/prepare.mjs's ensureChromium). */
const CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * Flags Chromium needs here: no sandbox (root in a container), no GPU, and none of its own network traffic (the
 * closed network refuses it, and it would only slow the pages down). Playwright adds --headless and a fresh
 * --user-data-dir of its own.
 */
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

function chromiumMissing(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  const installFile = join(repoRoot, ".test-results", "chromium-install.json");
  if (existsSync(installFile)) {
    const { reason } = JSON.parse(readFileSync(installFile, "utf8")) as { reason: string };
    return `${CHROMIUM_PATH} is missing: installing it failed: ${reason}`;
  }
  return `${CHROMIUM_PATH} is missing (\`npm test\` installs it with apt-get install -y chromium)`;
}

/** What the browser suites need: Chromium. */
const chromiumPrecondition: Precondition = {
  name: `Chromium (${CHROMIUM_PATH}, Debian's package)`,
  missing: chromiumMissing(),
};

/** Jest's `it` for browser tests: without Chromium they fail with the reason (test/support/not-run.ts). */
export const itInBrowser = itRequires(chromiumPrecondition);

/** The name of the function the hostile-input payloads call (test/support/xss-payloads.ts). */
export const XSS_MARKER = "__conveyorXss";

/** The binding through which the pages' listeners report to the test (a CDP binding: no CSP applies to it). */
const REPORT_BINDING = "__conveyorReport";

/**
 * Runs in every page before its own scripts, in the page's world (DevTools injects it: the CSP does not apply):
 * reports CSP violations, and defines the marker function a payload would call if it ever ran.
 */
const INIT_SCRIPT = `
(() => {
  const report = (kind, detail) => window.${REPORT_BINDING}({ kind, detail: String(detail) });
  document.addEventListener("securitypolicyviolation", (e) =>
    report("csp", e.violatedDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber));
  Object.defineProperty(window, "${XSS_MARKER}", { value: (tag) => report("xss", tag), writable: false });
})();
`;

/** Something a page did that fails the test: a JS error, a console error, a CSP violation, a dialog, a payload run. */
export interface Problem {
  kind: "pageerror" | "console" | "csp" | "dialog" | "xss" | "status";
  detail: string;
  url: string;
}

/** One person in the browser: their own cookies, and one page they work in. */
export interface Person {
  readonly name: string;
  readonly context: BrowserContext;
  readonly page: Page;
  /**
   * Opens a path of the stack's web base (or a full URL) and waits for it to load (a fresh load, also when only the
   * fragment differs from the page's); fails unless it answers `status` (200 by default). Takes a screenshot named after `label` (the path by default).
   */
  open(path: string, opts?: { status?: number; label?: string }): Promise<Page>;
  /** A full-page screenshot of the page as it is now, under .test-results/screenshots/<suite>/. */
  snap(label: string): Promise<void>;
  /**
   * Accepts the next dialog whose message matches (a confirm() a button asks before acting), as the person would
   * click OK; any other dialog is a problem.
   */
  acceptNextDialog(message: RegExp): void;
}

/** The suite's browser: people to act as, and the problems their pages have had. */
export interface BrowserHarness {
  /** A new person: a fresh browser context (no cookies) with one page. */
  person(name: string): Promise<Person>;
  /** The problems collected since the last call, cleared (the harness fails each test that had any). */
  takeProblems(): Problem[];
  /** Accepts problems matching `match` until the current test ends (a test that provokes them on purpose). */
  expectProblems(match: (p: Problem) => boolean): void;
  /** The failed requests for /favicon.ico the browser made by itself, on any page so far. */
  faviconProblems(): Problem[];
}

/** The web base: the pages live at the root of the stack's public URL (WEB_URL defaults to it). */
export function webUrl(path: string): string {
  return /^https?:\/\//.test(path) ? path : `${stack.apiUrl}${path.startsWith("/") ? "" : "/"}${path}`;
}

/**
 * Launches Chromium for this suite (beforeAll), fails each test whose pages had problems (afterEach), and closes it
 * (afterAll). Call at the top of a suite; without Chromium it launches nothing (the tests fail through itInBrowser).
 */
export function useBrowser(suiteFile: string): BrowserHarness {
  const suite = basename(suiteFile).replace(/\.browser\.test\.ts$/, "");
  const shotsDir = join(repoRoot, ".test-results", "screenshots", suite);
  let browser: Browser | undefined;
  let problems: Problem[] = [];
  const favicon: Problem[] = [];
  let allowed: ((p: Problem) => boolean)[] = [];
  let shot = 0;

  beforeAll(async () => {
    if (chromiumPrecondition.missing !== undefined) return;
    rmSync(shotsDir, { recursive: true, force: true });
    mkdirSync(shotsDir, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
  });

  afterEach(() => {
    const found = problems.filter((p) => !allowed.some((allow) => allow(p)));
    problems = [];
    allowed = [];
    if (found.length > 0) {
      throw new Error(
        `the pages had ${found.length} problem(s):\n${found.map((p) => `  ${p.kind} at ${p.url}: ${p.detail}`).join("\n")}`,
      );
    }
  });

  afterAll(async () => {
    await browser?.close();
  });

  const add = (problem: Problem) => {
    problems.push(problem);
  };

  async function snapPage(page: Page, label: string): Promise<void> {
    shot += 1;
    const file = `${String(shot).padStart(3, "0")}-${label.replace(/[^\w.-]+/g, "_").slice(0, 80)}.png`;
    await page.screenshot({ path: join(shotsDir, file), fullPage: true });
  }

  return {
    async person(name) {
      if (!browser) throw new Error("no browser: Chromium is missing (see the test's reason)");
      const context = await browser.newContext({ baseURL: stack.apiUrl, viewport: { width: 1280, height: 900 } });
      // Statuses a page was opened expecting: the console's "Failed to load resource" for that document is expected.
      const expectedStatus = new Map<string, number>();
      const expectedDialogs: RegExp[] = [];
      await context.exposeBinding(REPORT_BINDING, ({ page }, report: { kind: Problem["kind"]; detail: string }) => {
        add({ kind: report.kind, detail: report.detail, url: page?.url() ?? "?" });
      });
      await context.addInitScript({ content: INIT_SCRIPT });
      const watch = (page: Page) => {
        page.on("pageerror", (err) => add({ kind: "pageerror", detail: err.stack ?? err.message, url: page.url() }));
        page.on("console", (msg) => {
          if (msg.type() !== "error") return;
          const at = msg.location().url;
          const status = expectedStatus.get(at);
          if (status !== undefined && msg.text().includes(`status of ${status}`)) return;
          // The browser asks for /favicon.ico by itself: its answer is one problem of the site, checked once
          // (faviconProblems), not a failure of every test.
          if (new URL(at || "about:blank").pathname === "/favicon.ico") {
            favicon.push({ kind: "console", detail: msg.text(), url: at });
            return;
          }
          add({ kind: "console", detail: msg.text(), url: at || page.url() });
        });
        page.on("dialog", (dialog) => {
          const expected = expectedDialogs.findIndex((m) => m.test(dialog.message()));
          const failed = (err: unknown) => add({ kind: "dialog", detail: String(err), url: page.url() });
          if (expected >= 0 && dialog.type() === "confirm") {
            expectedDialogs.splice(expected, 1);
            dialog.accept().catch(failed);
            return;
          }
          add({ kind: "dialog", detail: `${dialog.type()}: ${dialog.message()}`, url: page.url() });
          dialog.dismiss().catch(failed);
        });
        page.on("response", (res) => {
          // A page's own assets and requests must all answer; the document's status is checked by open().
          const favicon = new URL(res.url()).pathname === "/favicon.ico";
          if (res.status() >= 400 && res.request().resourceType() !== "document" && !favicon) {
            add({ kind: "status", detail: `${res.request().method()} ${res.url()}: ${res.status()}`, url: page.url() });
          }
        });
      };
      context.on("page", watch);
      const page = await context.newPage();
      return {
        name,
        context,
        page,
        async open(path, opts = {}) {
          const url = webUrl(path);
          const status = opts.status ?? 200;
          if (status !== 200) expectedStatus.set(url, status);
          // The same page with another fragment would only scroll: opening means a fresh load.
          const bare = (u: string) => u.replace(/#.*$/, "");
          if (bare(page.url()) === bare(url)) await page.goto("about:blank");
          const res = await page.goto(url, { waitUntil: "load" });
          if (!res) throw new Error(`opening ${url} gave no response`);
          if (res.status() !== status) {
            throw new Error(`${name} opened ${url}: expected ${status}, got ${res.status()} at ${page.url()}`);
          }
          await snapPage(page, `${name}-${opts.label ?? path}`);
          return page;
        },
        snap: (label) => snapPage(page, `${name}-${label}`),
        acceptNextDialog(message) {
          expectedDialogs.push(message);
        },
      };
    },
    takeProblems() {
      const taken = problems;
      problems = [];
      return taken;
    },
    expectProblems(match) {
      allowed.push(match);
    },
    faviconProblems: () => [...favicon],
  };
}

/**
 * Moves the keyboard focus with Tab from where it is (from the top of the page with `fromTop`) until `target` has
 * it: fails when Tab never reaches it, as it would fail a person with only a keyboard.
 */
export async function focusByKeyboard(page: Page, target: Locator, opts: { fromTop?: boolean } = {}): Promise<void> {
  if (opts.fromTop) {
    await page.evaluate(() => {
      document.activeElement?.blur();
      window.getSelection()?.removeAllRanges();
    });
  }
  for (let i = 0; i < 400; i++) {
    if (await target.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press("Tab");
  }
  throw new Error(`400 presses of Tab never focused ${target}`);
}

/** Tabs from the top of the page to `target` and presses `key` (Enter by default), as a keyboard user would. */
export async function activateByKeyboard(page: Page, target: Locator, key = "Enter"): Promise<void> {
  await focusByKeyboard(page, target, { fromTop: true });
  await page.keyboard.press(key);
}

const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

/** One accessibility rule a page breaks, as axe-core reports it. */
export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * Runs axe-core on the page in an isolated world of its own (through the DevTools protocol: nothing is added to the
 * page, and its CSP stays as strict as the product's). Resolves with the serious and critical violations.
 */
export async function seriousAccessibilityViolations(page: Page): Promise<AxeViolation[]> {
  const cdp = await page.context().newCDPSession(page);
  try {
    const { frameTree } = await cdp.send("Page.getFrameTree");
    const { executionContextId } = await cdp.send("Page.createIsolatedWorld", {
      frameId: frameTree.frame.id,
      worldName: "conveyor-axe",
    });
    const expression = `${axeSource};
      axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations
        .filter((v) => v.impact === "serious" || v.impact === "critical")
        .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(" ")) })))`;
    const { result, exceptionDetails } = await cdp.send("Runtime.evaluate", {
      expression,
      contextId: executionContextId,
      awaitPromise: true,
      returnByValue: true,
    });
    if (exceptionDetails) {
      throw new Error(`axe-core failed: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    }
    return result.value as AxeViolation[];
  } finally {
    await cdp.detach();
  }
}

/**
 * Markup a user's text must never turn into, found in the page's DOM: event-handler attributes, javascript: or
 * data: URLs in links, sources and forms, scripts without the page's nonce or from elsewhere than /assets/, and
 * frames, objects, embeds and bases. Each finding names the element.
 */
export async function injectedMarkup(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const describe = (el: Element) => `<${el.tagName.toLowerCase()}> ${el.outerHTML.slice(0, 160)}`;
    for (const el of Array.from(document.querySelectorAll("*")) as Element[]) {
      for (const attr of Array.from(el.attributes) as { name: string; value: string }[]) {
        const name = attr.name.toLowerCase();
        // Browsers ignore whitespace and control characters in a URL's scheme ("java\tscript:"): so does this.
        const value = Array.from(attr.value)
          .filter((c) => c.charCodeAt(0) > 0x20)
          .join("")
          .toLowerCase();
        if (name.startsWith("on")) found.push(`event handler ${name}: ${describe(el)}`);
        if (
          ["href", "src", "action", "formaction", "xlink:href", "data", "srcdoc"].includes(name) &&
          (value.startsWith("javascript:") || value.startsWith("data:text/html") || value.startsWith("vbscript:"))
        ) {
          found.push(`${name}=${attr.value}: ${describe(el)}`);
        }
      }
      const tag = el.tagName.toLowerCase();
      if (["iframe", "object", "embed", "base", "frame", "frameset"].includes(tag)) found.push(describe(el));
      if (tag === "meta" && el.getAttribute("http-equiv")) found.push(describe(el));
      if (tag === "script") {
        // The page's own scripts come from /assets/ or carry its nonce (which the DOM keeps out of the attribute).
        const src = el.getAttribute("src");
        const own = src !== null && new URL(src, location.href).origin === location.origin && src.includes("/assets/");
        if (!own && !el.nonce) found.push(`a script not the page's own: ${describe(el)}`);
      }
    }
    return found;
  });
}

/** The computed CSS colour of an element (`rgb(r, g, b)`). */
export function colourOf(target: Locator): Promise<string> {
  return target.evaluate((el) => window.getComputedStyle(el).color as string);
}

/** The id of the element the page's URL fragment targets (`:target`), or null. */
export function targetedId(page: Page): Promise<string | null> {
  return page.evaluate(() => (document.querySelector(":target")?.id as string | undefined) ?? null);
}

/** Whether a form control's value passes the browser's own checks (required, type, pattern). */
export function isValidInput(target: Locator): Promise<boolean> {
  return target.evaluate((el) => (el as unknown as { validity: { valid: boolean } }).validity.valid);
}
