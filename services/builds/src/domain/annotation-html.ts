/**
 * An annotation's Markdown as HTML (CommonMark with GitHub's tables and strikethrough, links found in text), with the
 * HTML written in the Markdown kept only where an allow-list permits it: annotations routinely carry `<details>`,
 * `<img>` and tables, and never scripts, event handlers, styles or `javascript:` URLs. Pure.
 */
import MarkdownIt from "markdown-it";
import sanitizeHtml from "sanitize-html";

const markdown = new MarkdownIt({ html: true, linkify: true });

/** Schemes links and images may use; `artifact://` names an artifact of the build, as in Buildkite. */
const SCHEMES = ["http", "https", "mailto", "artifact"];

const ALIGN = /^(left|right|center)$/;

const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [
    ...["h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr", "blockquote", "pre", "code", "kbd", "samp"],
    ...["em", "strong", "b", "i", "u", "s", "del", "ins", "mark", "small", "sub", "sup", "abbr", "span", "div"],
    ...["ul", "ol", "li", "dl", "dt", "dd", "details", "summary", "a", "img"],
    ...["table", "caption", "thead", "tbody", "tfoot", "tr", "th", "td"],
  ],
  allowedAttributes: {
    a: ["href", "title", "name", "rel"],
    img: ["src", "alt", "title", "width", "height"],
    abbr: ["title"],
    ol: ["start"],
    // Markdown tables align columns with a style: the only style kept (allowedStyles).
    th: ["align", "colspan", "rowspan", "style"],
    td: ["align", "colspan", "rowspan", "style"],
    details: ["open"],
    // Markdown's fenced code names its language as a class.
    code: ["class"],
    span: ["class"],
    div: ["class"],
  },
  allowedClasses: { code: [/^language-[\w+#.-]+$/], span: [/^term-[\w-]+$/], div: [/^term-[\w-]+$/] },
  allowedStyles: { th: { "text-align": [ALIGN] }, td: { "text-align": [ALIGN] } },
  allowedSchemes: SCHEMES,
  allowedSchemesAppliedToAttributes: ["href", "src"],
  allowProtocolRelative: false,
  // Links to elsewhere must not act on the page that shows them.
  transformTags: { a: sanitizeHtml.simpleTransform("a", { rel: "nofollow noopener noreferrer" }) },
};

/** Renders an annotation body to safe HTML. */
export function renderAnnotationHtml(body: string): string {
  return sanitizeHtml(markdown.render(body), SANITIZE);
}
