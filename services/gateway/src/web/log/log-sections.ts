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

/** Which groups of a log show their lines at first, by the index of their header among the log's headers. */
export interface SectionPlan {
  isOpen(headerIndex: number, kind: GroupKind): boolean;
}

/** Reads a log's lines in order (only their markers count) and then says which groups are open. */
export interface SectionPlanner {
  add(line: LogLine): void;
  plan(): SectionPlan;
}

/**
 * Buildkite's rules for which groups are open: a `+++` group is open, `---` and `~~~` groups are closed (`~~~` is
 * shown de-emphasized), `^^^ +++` opens the group it ends, and when no group is open by either of those, the last
 * `---` group is. The last rule needs the whole log, so a reader that renders as it reads (the whole log, streamed)
 * reads the markers first; it keeps a few numbers per `^^^ +++`, never the lines. Pure.
 */
export function createSectionPlanner(): SectionPlanner {
  let headers = 0;
  let lastCollapsed = -1;
  let anyExpanded = false;
  const opened = new Set<number>();
  return {
    add(line) {
      if (line.header) {
        if (line.header.kind === "expanded") anyExpanded = true;
        if (line.header.kind === "collapsed") lastCollapsed = headers;
        headers++;
      } else if (line.expandsPrevious && headers > 0) {
        opened.add(headers - 1);
        anyExpanded = true;
      }
    },
    plan() {
      const fallback = anyExpanded ? -1 : lastCollapsed;
      return {
        isOpen: (index, kind) => kind === "expanded" || opened.has(index) || index === fallback,
      };
    },
  };
}

/** The plan of lines held in memory. */
export function planOf(lines: readonly LogLine[]): SectionPlan {
  const planner = createSectionPlanner();
  for (const line of lines) planner.add(line);
  return planner.plan();
}

/** Groups lines into sections, open by Buildkite's rules (createSectionPlanner). Pure. */
export function sectionsOf(lines: readonly LogLine[]): LogSection[] {
  const plan = planOf(lines);
  const sections: LogSection[] = [];
  let current: LogSection | undefined;
  let headers = 0;
  for (const line of lines) {
    if (line.header) {
      const open = plan.isOpen(headers++, line.header.kind);
      current = { header: line, kind: line.header.kind, lines: [], open };
      sections.push(current);
      continue;
    }
    if (line.expandsPrevious) continue;
    if (!current) {
      current = { header: null, kind: null, lines: [], open: true };
      sections.push(current);
    }
    current.lines.push(line);
  }
  return sections;
}
