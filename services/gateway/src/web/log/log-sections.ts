import type { GroupKind, LogLine } from "./log-lines.js";

/** A run of log lines under one group header (or before the first header, or before the tail when cut). */
export interface LogSection {
  /** The header line; null for the lines before any header (or before the first header of a tail). */
  header: LogLine | null;
  kind: GroupKind | null;
  lines: LogLine[];
  /** Whether the group shows its lines at first (a section without header always does). */
  open: boolean;
}

/**
 * Groups lines into sections with Buildkite's rules for which are open: a `+++` group is open, `---` and `~~~`
 * groups are closed (`~~~` is shown de-emphasized), `^^^ +++` opens the group it ends, and when no group is open by
 * either of those, the last `---` group is. Pure.
 */
export function sectionsOf(lines: readonly LogLine[]): LogSection[] {
  const sections: LogSection[] = [];
  let current: LogSection | undefined;
  let anyExpanded = false;
  for (const line of lines) {
    if (line.header) {
      current = { header: line, kind: line.header.kind, lines: [], open: line.header.kind === "expanded" };
      anyExpanded ||= current.open;
      sections.push(current);
      continue;
    }
    if (line.expandsPrevious) {
      if (current?.header) {
        current.open = true;
        anyExpanded = true;
      }
      continue;
    }
    if (!current) {
      current = { header: null, kind: null, lines: [], open: true };
      sections.push(current);
    }
    current.lines.push(line);
  }
  if (!anyExpanded) {
    const last = sections.findLast((s) => s.kind === "collapsed");
    if (last) last.open = true;
  }
  return sections;
}
