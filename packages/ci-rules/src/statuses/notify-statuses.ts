/**
 * The `notify: - github_commit_status: {context: …}` entries of a pipeline's YAML (docs/statuses.md#what-is-published):
 * at the top level (the build's) and on command steps (a step's, found again by the step's key or label). Pure; the
 * YAML is read within the pipeline parser's bounds. Other notification kinds are not read here.
 */

import { loadYaml } from "../steps/yaml-load.js";
import type { CommitStatusNotification } from "./commit-statuses.js";
import { MAX_STATUS_CONTEXT_LENGTH } from "./status-text.js";

/** The commit-status notifications a pipeline's YAML declares. */
export interface CommitStatusNotifications {
  build: CommitStatusNotification[];
  /** A step's entries by its key. */
  byStepKey: ReadonlyMap<string, CommitStatusNotification[]>;
  /** A step's entries by its label, for steps without a key. */
  byStepLabel: ReadonlyMap<string, CommitStatusNotification[]>;
}

export const NO_COMMIT_STATUS_NOTIFICATIONS: CommitStatusNotifications = {
  build: [],
  byStepKey: new Map(),
  byStepLabel: new Map(),
};

/** Entries read per list at most (a pipeline's notify list is short; this keeps the rule total). */
const MAX_ENTRIES = 50;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The github_commit_status entries of one `notify:` list; anything else in it is left to the other notifications. */
function entriesOf(list: unknown, level: "build" | "step"): CommitStatusNotification[] {
  if (!Array.isArray(list)) return [];
  const out: CommitStatusNotification[] = [];
  for (const entry of list.slice(0, MAX_ENTRIES)) {
    if (!isRecord(entry) || !Object.hasOwn(entry, "github_commit_status")) continue;
    const body = entry.github_commit_status;
    const options = isRecord(body) ? body : {};
    const context = typeof options.context === "string" ? options.context.trim() : "";
    const condition = typeof entry.if === "string" ? entry.if.trim() : "";
    out.push({
      context: context === "" ? null : context.slice(0, MAX_STATUS_CONTEXT_LENGTH),
      // Buildkite takes blocked_builds_as_pending at build level only.
      blockedBuildsAsPending: level === "build" && options.blocked_builds_as_pending === true,
      condition: condition === "" ? null : condition,
    });
  }
  return out;
}

/**
 * Reads the build-level and step-level commit-status notifications of pipeline YAML; none when it does not read
 * (the pipelines service refused such YAML already) or declares none. Steps inside groups are read too; a group's
 * own `notify:` is not (its status would sum up its jobs', which is not done).
 */
export function commitStatusNotifications(source: string): CommitStatusNotifications {
  if (!source.includes("github_commit_status")) return NO_COMMIT_STATUS_NOTIFICATIONS;
  let root: unknown;
  try {
    const loaded = loadYaml(source);
    if (!loaded.ok) return NO_COMMIT_STATUS_NOTIFICATIONS;
    root = loaded.root.v;
  } catch {
    return NO_COMMIT_STATUS_NOTIFICATIONS;
  }
  const byStepKey = new Map<string, CommitStatusNotification[]>();
  const byStepLabel = new Map<string, CommitStatusNotification[]>();
  const visit = (steps: unknown, depth: number) => {
    if (!Array.isArray(steps) || depth > 1) return;
    for (const step of steps) {
      if (!isRecord(step)) continue;
      if (Array.isArray(step.steps)) {
        visit(step.steps, depth + 1);
        continue;
      }
      const entries = entriesOf(step.notify, "step");
      if (entries.length === 0) continue;
      const key = typeof step.key === "string" ? step.key : typeof step.identifier === "string" ? step.identifier : "";
      const label = typeof step.label === "string" ? step.label : typeof step.name === "string" ? step.name : "";
      if (key.trim() !== "") byStepKey.set(key.trim(), entries);
      else if (label.trim() !== "") byStepLabel.set(label.trim(), entries);
    }
  };
  if (Array.isArray(root)) {
    visit(root, 0);
    return { build: [], byStepKey, byStepLabel };
  }
  if (!isRecord(root)) return NO_COMMIT_STATUS_NOTIFICATIONS;
  visit(root.steps, 0);
  return { build: entriesOf(root.notify, "build"), byStepKey, byStepLabel };
}

/** A job's step-level entries: by its step's key, else its label. */
export function stepCommitStatusNotifications(
  notifications: CommitStatusNotifications,
  job: { stepKey: string; label: string },
): CommitStatusNotification[] {
  if (job.stepKey !== "") return notifications.byStepKey.get(job.stepKey) ?? [];
  return notifications.byStepLabel.get(job.label.trim()) ?? [];
}
