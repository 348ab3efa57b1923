/**
 * Pipeline YAML's `notify:` (docs/notifications.md#notify), at build level (beside `steps:`) and on command steps.
 * Which forms are served: build level `webhook`, `email`, `slack`; step level `slack`; `github_commit_status` at both
 * levels, its `context` and (build level) `blocked_builds_as_pending` checked, for the commit statuses
 * (docs/statuses.md). Every other form (`github_check`,
 * (`basecamp_campfire`, `pagerduty_change_event`, …) is refused naming it, never accepted and ignored. Pure.
 */
import { conditionProblem } from "../conditionals/conditionals.js";
import {
  describeValue,
  isMapping,
  isUnset,
  item,
  member,
  type Problems,
  readString,
  readStringArray,
  type Val,
} from "../steps/step-values.js";

/** Where a notify list is: the build's (top level) or a command step's. */
export type NotifyLevel = "build" | "step";

interface RuleBase {
  /** The `if:` condition as written; the rule fires only when it holds. */
  if?: string;
}

/** One entry of a `notify:` list. */
export type NotifyRule = RuleBase &
  (
    | { type: "webhook"; url: string }
    | { type: "email"; address: string }
    | { type: "slack"; url: string; channels: string[]; message?: string }
    | { type: "github_commit_status"; options: Record<string, unknown> }
  );

/** Bounds of `notify:` (docs/limits.md). */
export const NOTIFY_LIMITS = { rules: 20, channels: 20, chars: 2048, message: 4000 };

/** The forms each level takes. */
const SERVED: Record<NotifyLevel, readonly string[]> = {
  build: ["webhook", "email", "slack", "github_commit_status"],
  step: ["slack", "github_commit_status"],
};

/** Buildkite's forms this project does not serve, and why (the 422 says it). */
const NOT_SERVED: Record<string, string> = {
  basecamp_campfire: "is not supported: Basecamp notifications are not sent by this server",
  pagerduty_change_event: "is not supported: PagerDuty change events are not sent by this server",
  origin_check: "is not supported: Cursor Origin checks are not sent by this server",
  github_check: "is not supported: GitHub checks are not created by this server (github_commit_status is)",
};

const EMAIL = /^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/;

function httpUrl(val: Val | undefined, field: string, p: Problems): string | undefined {
  const text = readString(val, field, p, { nonEmpty: true });
  if (text === undefined) return undefined;
  if (text.length > NOTIFY_LIMITS.chars) return p.add(field, `must be at most ${NOTIFY_LIMITS.chars} characters`);
  try {
    const url = new URL(text);
    if (url.protocol === "http:" || url.protocol === "https:") return text;
  } catch {
    // refused below
  }
  return p.add(field, "must be an http or https URL");
}

/** `slack:` as a URL string, or `{webhook_url, channels, message}`; a channel name alone has nowhere to go. */
function readSlack(val: Val, field: string, p: Problems): Extract<NotifyRule, { type: "slack" }> | undefined {
  if (!isMapping(val.v)) {
    const text = readString(val, field, p, { nonEmpty: true });
    if (text === undefined) return undefined;
    if (!/^https?:\/\//i.test(text)) {
      return p.add(
        field,
        "must be a Slack incoming-webhook URL, or a mapping with webhook_url (channels alone need a Slack workspace, " +
          "which this server does not connect to)",
      );
    }
    const url = httpUrl(val, field, p);
    return url === undefined ? undefined : { type: "slack", url, channels: [] };
  }
  for (const key of Object.keys(val.v)) {
    if (!["webhook_url", "channels", "message"].includes(key)) p.add(`${field}.${key}`, "is not a slack attribute");
  }
  const url = httpUrl(member(val, "webhook_url"), `${field}.webhook_url`, p);
  if (isUnset(member(val, "webhook_url"))) p.add(`${field}.webhook_url`, "is required (a Slack incoming-webhook URL)");
  const channels = readStringArray(member(val, "channels"), `${field}.channels`, p) ?? [];
  if (channels.length > NOTIFY_LIMITS.channels) p.add(`${field}.channels`, `must be at most ${NOTIFY_LIMITS.channels}`);
  const message = readString(member(val, "message"), `${field}.message`, p);
  if (message !== undefined && message.length > NOTIFY_LIMITS.message) {
    p.add(`${field}.message`, `must be at most ${NOTIFY_LIMITS.message} characters`);
  }
  if (url === undefined) return undefined;
  return { type: "slack", url, channels, ...(message === undefined ? {} : { message }) };
}

function readRule(val: Val, field: string, level: NotifyLevel, p: Problems, uploaded: boolean): NotifyRule | undefined {
  if (!isMapping(val.v)) return p.add(field, `must be a mapping such as {webhook: URL}, got ${describeValue(val.v)}`);
  const keys = Object.keys(val.v).filter((k) => k !== "if");
  if (keys.length !== 1) {
    return p.add(field, `must name one notification (${SERVED[level].join(", ")}) and optionally if`);
  }
  const kind = keys[0] as string;
  const at = `${field}.${kind}`;
  if (NOT_SERVED[kind]) return p.add(at, NOT_SERVED[kind] as string);
  if (uploaded && kind === "github_commit_status") return p.add(at, UPLOADED_STATUS);
  if (!SERVED[level].includes(kind)) {
    return p.add(
      at,
      SERVED.build.includes(kind)
        ? `is not a step-level notification (a step takes ${SERVED.step.join(", ")})`
        : `is not a notification this server knows (it takes ${SERVED[level].join(", ")})`,
    );
  }
  const cond = member(val, "if");
  let condition: string | undefined;
  if (!isUnset(cond)) {
    const problem = conditionProblem(cond.v);
    if (problem) p.add(`${field}.if`, problem);
    else condition = cond.v as string;
  }
  const given = member(val, kind) as Val;
  const withIf = <T extends NotifyRule>(rule: T | undefined): NotifyRule | undefined =>
    rule && (condition === undefined ? rule : { ...rule, if: condition });
  switch (kind) {
    case "webhook": {
      const url = httpUrl(given, at, p);
      return withIf(url === undefined ? undefined : { type: "webhook", url });
    }
    case "email": {
      const address = readString(given, at, p, { nonEmpty: true });
      if (address === undefined) return undefined;
      if (address.length > 254 || !EMAIL.test(address)) return p.add(at, "must be one email address");
      return withIf({ type: "email", address });
    }
    case "slack":
      return withIf(readSlack(given, at, p));
    default: {
      // github_commit_status: its options checked, then kept as written for the commit statuses (docs/statuses.md).
      if (!isUnset(given) && !isMapping(given.v)) return p.add(at, `must be a mapping, got ${describeValue(given.v)}`);
      const options = isMapping(given.v) ? { ...given.v } : {};
      const takes = level === "build" ? ["context", "blocked_builds_as_pending"] : ["context"];
      const unknown = Object.keys(options).find((k) => !takes.includes(k));
      if (unknown !== undefined)
        return p.add(`${at}.${unknown}`, `is not a ${kind} option (it takes ${takes.join(", ")})`);
      if (options.context !== undefined && (typeof options.context !== "string" || options.context.length > 255)) {
        return p.add(`${at}.context`, "must be a string of at most 255 characters");
      }
      if (options.blocked_builds_as_pending !== undefined && typeof options.blocked_builds_as_pending !== "boolean") {
        return p.add(`${at}.blocked_builds_as_pending`, "must be true or false");
      }
      return withIf({ type: "github_commit_status", options });
    }
  }
}

/**
 * Reads a `notify:` list (absent or null: none). A problem is added for each wrong entry, naming it
 * (`configuration.notify[1].basecamp_campfire`).
 */
export function readNotify(
  val: Val | undefined,
  field: string,
  level: NotifyLevel,
  p: Problems,
  uploaded = false,
): NotifyRule[] {
  if (isUnset(val)) return [];
  if (!Array.isArray(val.v)) {
    p.add(field, `must be a list of notifications, got ${describeValue(val.v)}`);
    return [];
  }
  if (val.v.length > NOTIFY_LIMITS.rules) {
    p.add(field, `must have at most ${NOTIFY_LIMITS.rules} notifications`);
    return [];
  }
  const rules: NotifyRule[] = [];
  for (let i = 0; i < val.v.length; i++) {
    const rule = readRule(item(val, i), `${field}[${i}]`, level, p, uploaded);
    if (rule) rules.push(rule);
  }
  return rules;
}

/**
 * The events each served rule fires on (docs/notifications.md#notify), as Buildkite documents them: a build's
 * webhook on created, started, blocked and finished; email on failing and finished; Slack on the build's events
 * (build level) or its step failing and finishing (step level). Commit statuses are the statuses' own.
 */
export function notifyFiresOn(rule: NotifyRule, level: NotifyLevel, event: string): boolean {
  if (level === "step") return rule.type === "slack" && (event === "step.failing" || event === "step.finished");
  switch (rule.type) {
    case "webhook":
      return ["build.scheduled", "build.running", "build.blocked", "build.finished"].includes(event);
    case "email":
      return event === "build.failing" || event === "build.finished";
    case "slack":
      return ["build.running", "build.blocked", "build.failing", "build.finished"].includes(event);
    default:
      return false;
  }
}

/**
 * Why `github_commit_status` in an uploaded pipeline is refused: the commit statuses are read from the pipeline's
 * own configuration (docs/statuses.md), so one in an upload would be accepted and never take effect.
 */
const UPLOADED_STATUS =
  "is not supported in an uploaded pipeline: commit statuses are read from the pipeline's configuration (docs/statuses.md)";

/**
 * The build-level `notify:` of a pipeline document (its top-level mapping). In an uploaded one it adds to the build's
 * notifications (docs/notifications.md#notify-in-uploaded-pipelines), `github_commit_status` excepted.
 */
export function readBuildNotify(root: Val, p: Problems, uploaded: boolean): NotifyRule[] {
  const val = member(root, "notify");
  if (isUnset(val)) return [];
  return readNotify(val, "configuration.notify", "build", p, uploaded);
}

/**
 * A step's `notify:`: read on command steps; refused on other kinds (Buildkite takes step-level notify on command
 * steps only, and a group's would be ignored here); `github_commit_status` is refused in an uploaded pipeline.
 * Undefined when absent or refused.
 */
export function readStepNotify(
  body: Val,
  field: string,
  kind: string,
  p: Problems,
  uploaded: boolean,
): NotifyRule[] | undefined {
  const val = member(body, "notify");
  if (isUnset(val)) return undefined;
  if (kind !== "script") return p.add(`${field}.notify`, "is taken on command steps only");
  const rules = readNotify(val, `${field}.notify`, "step", p, uploaded);
  return rules.length > 0 ? rules : undefined;
}
