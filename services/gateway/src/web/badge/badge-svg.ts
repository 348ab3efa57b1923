import { escapeHtml } from "../html.js";

/** What a pipeline's badge says, from its latest build's state on the branch. */
export type BadgeStatus = "passing" | "failing" | "running" | "unknown";

const COLOURS: Record<BadgeStatus, string> = {
  passing: "#44cc11",
  failing: "#e05d44",
  running: "#dfb317",
  unknown: "#9f9f9f",
};

/** The badge status of a build state (a build still under way is running; canceled, skipped and none unknown). */
export function badgeStatus(buildState: string | undefined): BadgeStatus {
  switch (buildState) {
    case "passed":
      return "passing";
    case "failed":
    case "failing":
      return "failing";
    case "scheduled":
    case "running":
    case "blocked":
    case "canceling":
      return "running";
    default:
      return "unknown";
  }
}

/** The width of text in Verdana 11px, near enough for a badge: about 6.5 px per character, wider for capitals. */
function textWidth(text: string): number {
  let w = 0;
  for (const c of text) w += /[A-Z]/.test(c) ? 7.5 : /[iIl.,:;|!']/.test(c) ? 3.5 : 6.5;
  return Math.ceil(w);
}

/** A flat two-part badge (label | status) as SVG, as shields.io draws them; every text escaped. */
export function badgeSvg(status: BadgeStatus, label = "build"): string {
  const left = textWidth(label) + 12;
  const right = textWidth(status) + 12;
  const width = left + right;
  const l = escapeHtml(label);
  const s = escapeHtml(status);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="20" role="img" aria-label="${l}: ${s}"><title>${l}: ${s}</title><linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient><clipPath id="r"><rect width="${width}" height="20" rx="3" fill="#fff"/></clipPath><g clip-path="url(#r)"><rect width="${left}" height="20" fill="#555"/><rect x="${left}" width="${right}" height="20" fill="${COLOURS[status]}"/><rect width="${width}" height="20" fill="url(#s)"/></g><g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11"><text x="${left / 2}" y="14">${l}</text><text x="${left + right / 2}" y="14">${s}</text></g></svg>`;
}
