import { XSS_MARKER } from "./browser.js";

// Known cross-site scripting payloads, for test/browser/hostile-input.browser.test.ts. Each calls the marker
// function the browser harness defines in every page (test/support/browser.ts) with its own name, so that a payload
// that ever runs says which one it was; a few call alert() instead, which the harness's dialog listener catches.

/** One payload: a name for reports, and the text sent through a field. */
export interface XssPayload {
  name: string;
  text: string;
}

const call = (name: string) => `${XSS_MARKER}('${name}')`;

/** Payloads for any text field: markup, attributes, URLs, templates. */
export const XSS_PAYLOADS: readonly XssPayload[] = [
  { name: "script", text: `<script>${call("script")}</script>` },
  { name: "img-onerror", text: `<img src=x onerror="${call("img-onerror")}">` },
  { name: "svg-onload", text: `"><svg onload=${call("svg-onload")}>` },
  { name: "svg-slash", text: `'><svg/onload=${call("svg-slash")}>` },
  { name: "attr-break", text: `" autofocus onfocus="${call("attr-break")}" x="` },
  { name: "attr-break-single", text: `' autofocus onfocus='${call("attr-break-single")}' x='` },
  { name: "js-url", text: `javascript:${call("js-url")}` },
  { name: "js-url-link", text: `<a href="javascript:${call("js-url-link")}">open</a>` },
  { name: "textarea-escape", text: `</textarea></title></style><script>${call("textarea-escape")}</script>` },
  { name: "details", text: `<details open ontoggle="${call("details")}">x</details>` },
  { name: "iframe-srcdoc", text: `<iframe srcdoc="<script>parent.${call("iframe-srcdoc")}</script>"></iframe>` },
  { name: "math-mxss", text: `<math><mtext><table><mglyph><style><img src=x onerror="${call("math-mxss")}">` },
  { name: "template", text: `{{constructor.constructor('${call("template")}')()}}` },
  { name: "template-literal", text: `\${${call("template-literal")}}` },
  { name: "erb", text: `<%= ${call("erb")} %>` },
  { name: "markdown-link", text: `[click](javascript:${call("markdown-link")})` },
  { name: "markdown-image", text: `![x](javascript:${call("markdown-image")})` },
  { name: "markdown-image-attr", text: `![x](x" onerror="${call("markdown-image-attr")})` },
  { name: "alert", text: `<img src=x onerror=alert('alert')>` },
  { name: "meta-refresh", text: `<meta http-equiv="refresh" content="0;url=javascript:${call("meta-refresh")}">` },
  { name: "base", text: `<base href="javascript:${call("base")}//">` },
];

const ESC = "\u001b";
const BEL = "\u0007";

/**
 * Payloads for log bytes: the text ones, and terminal sequences the log renderer reads (colours around markup, OSC 8
 * hyperlinks to javascript: and data: URLs, a group header with markup).
 */
export const LOG_PAYLOADS: readonly XssPayload[] = [
  ...XSS_PAYLOADS,
  { name: "ansi-colour", text: `${ESC}[31m<script>${call("ansi-colour")}</script>${ESC}[0m` },
  { name: "osc8-js", text: `${ESC}]8;;javascript:${call("osc8-js")}${BEL}click me${ESC}]8;;${BEL}` },
  { name: "osc8-js-st", text: `${ESC}]8;;javascript:${call("osc8-js-st")}${ESC}\\click me${ESC}]8;;${ESC}\\` },
  {
    name: "osc8-data",
    text: `${ESC}]8;;data:text/html,<script>${call("osc8-data")}</script>${BEL}data link${ESC}]8;;${BEL}`,
  },
  {
    name: "osc8-quote",
    text: `${ESC}]8;;https://example.com/" onmouseover="${call("osc8-quote")}${BEL}q${ESC}]8;;${BEL}`,
  },
  { name: "group-header", text: `--- <img src=x onerror="${call("group-header")}">` },
];

/** A payload's text made safe for a field that takes no spaces or quotes (a branch, a tag value): the markup kept. */
export function compact(payload: XssPayload): string {
  return payload.text.replace(/\s+/g, "/");
}
