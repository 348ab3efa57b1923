import { type Timestamp, timestampMs } from "@bufbuild/protobuf/wkt";
import type { BuildUser } from "@conveyor/proto/builds";
import { html, type SafeHtml } from "./html.js";

/**
 * How every page writes states, times, durations and people, so that the organization, pipeline, build and agent
 * pages read alike.
 */

/** How a state reads on the pages: Buildkite's words, underscores as spaces. */
export function stateLabel(state: string): string {
  return state === "" ? "unknown" : state.replaceAll("_", " ");
}

/** The stylesheet's class of a state (`state-<state>`); anything but a state's letters is dropped. */
export function stateClass(state: string): string {
  return `state-${state.replace(/[^a-z_]/g, "") || "none"}`;
}

/** A state as a badge, coloured by the stylesheet's `state-<state>` classes. */
export function stateBadge(state: string, label = stateLabel(state)): SafeHtml {
  return html`<span class="state ${stateClass(state)}">${label}</span>`;
}

/** A time as UTC text in a <time> element that the pages' script shows in the reader's zone; empty without one. */
export function timeTag(ts: Timestamp | undefined): SafeHtml {
  if (!ts) return html``;
  const iso = new Date(timestampMs(ts)).toISOString();
  return html`<time datetime="${iso}" data-local>${iso.slice(0, 19).replace("T", " ")} UTC</time>`;
}

/** A length of time as people read it: `45s`, `3m 07s`, `2h 04m`. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

/** How long something ran: from its start to its end, or to `now` while it runs; empty before it started. */
export function durationOf(start: Timestamp | undefined, end: Timestamp | undefined, now: number): string {
  if (!start) return "";
  return formatDuration((end ? timestampMs(end) : now) - timestampMs(start));
}

/** A person as the pages name them: their name, or their email. */
export function personName(user: Pick<BuildUser, "name" | "email"> | undefined): string {
  return user?.name || user?.email || "";
}

/** A commit as the pages show it: its first 7 characters (a SHA's short form), or the ref as it is. */
export function shortCommit(commit: string): string {
  return /^[0-9a-f]{40}$/i.test(commit) ? commit.slice(0, 7) : commit;
}
