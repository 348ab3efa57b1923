/**
 * GitLab's deliveries as webhook events (webhook-event.ts): Push Hook, Tag Push Hook and Merge Request Hook (and the
 * same events through a System Hook, told apart by `object_kind`). A merge request's `update` is `synchronize` when
 * it brought commits (`oldrev`), `ready_for_review` or `converted_to_draft` when its draft state changed, `labeled`
 * when its labels did, and `edited` otherwise. Pure.
 */

import { knownAction } from "./github-events.js";
import {
  isZeroSha,
  labelNames,
  type Node,
  object,
  objects,
  optionalBoolean,
  optionalObject,
  optionalString,
  person,
  refName,
  root,
  string,
  wholeNumber,
} from "./payload-reader.js";
import type { ParsedDelivery, PullRequestEvent, WebhookCommit } from "./webhook-event.js";

const KINDS: Record<string, string> = {
  "Push Hook": "push",
  "Tag Push Hook": "tag_push",
  "Merge Request Hook": "merge_request",
};

/** The events of a GitLab delivery whose X-Gitlab-Event is `event`; throws PayloadProblem for a payload it cannot read. */
export function parseGitLabEvent(event: string, payload: unknown): ParsedDelivery {
  const body = root(payload);
  const kind = event === "System Hook" ? optionalString(body, "object_kind") : KINDS[event];
  switch (kind) {
    case "push":
    case "tag_push":
      return pushOf(body);
    case "merge_request":
      return { kind: "events", events: [mergeRequestOf(body)] };
    default:
      return { kind: "ignored", reason: `GitLab "${event}" events build nothing.` };
  }
}

function pushOf(body: Node): ParsedDelivery {
  const ref = string(body, "ref");
  const target = refName(ref);
  if (!target) return { kind: "ignored", reason: `A push to ${ref} is neither a branch nor a tag: nothing to build.` };
  const after = optionalString(body, "after");
  const deleted = after !== "" && isZeroSha(after);
  if (deleted) return { kind: "events", events: [{ kind: "push", ref: target, head: null, deleted }] };
  const sha = optionalString(body, "checkout_sha") || after;
  if (sha === "") return { kind: "invalid", problem: "after or checkout_sha must name the pushed commit" };
  const pusher = { name: optionalString(body, "user_name"), email: optionalString(body, "user_email") };
  const commit = objects(body, "commits").find((c) => optionalString(c, "id") === sha);
  const head: WebhookCommit = commit
    ? { sha, message: optionalString(commit, "message"), author: person(optionalObject(commit, "author")) }
    : // A tag's push carries the tag's message, not the commit's; a push of a known commit lists none.
      { sha, message: optionalString(body, "message"), author: pusher.name || pusher.email ? pusher : null };
  return { kind: "events", events: [{ kind: "push", ref: target, head, deleted }] };
}

function mergeRequestOf(body: Node): PullRequestEvent {
  const attrs = object(body, "object_attributes");
  const source = optionalObject(attrs, "source") ?? optionalObject(body, "project");
  const target = optionalObject(attrs, "target") ?? object(body, "project");
  const lastCommit = optionalObject(attrs, "last_commit");
  const sourceName = optionalString(source, "path_with_namespace");
  const targetName = string(target, "path_with_namespace");
  const sourceProject = optionalString(attrs, "source_project_id");
  const targetProject = optionalString(attrs, "target_project_id");
  const draft = optionalBoolean(attrs, "draft") ?? optionalBoolean(attrs, "work_in_progress");
  return {
    kind: "pull_request",
    action: mergeRequestAction(body, attrs),
    number: wholeNumber(attrs, "iid"),
    title: optionalString(attrs, "title"),
    draft,
    labels: labelNames(body, "labels", "title"),
    head: {
      branch: string(attrs, "source_branch"),
      sha: optionalString(lastCommit, "id") || string(attrs, "last_commit_sha"),
      repository: sourceName,
      owner: sourceName.split("/")[0] ?? "",
      cloneUrl: optionalString(source, "git_http_url") || optionalString(source, "http_url"),
    },
    base: { branch: string(attrs, "target_branch"), repository: targetName },
    fork: sourceProject !== "" && targetProject !== "" ? sourceProject !== targetProject : sourceName !== targetName,
    message: optionalString(lastCommit, "message"),
    author: person(optionalObject(lastCommit, "author")) ?? person(optionalObject(body, "user"), ["name", "username"]),
  };
}

/** What a merge request's action comes to in GitHub's words. */
function mergeRequestAction(body: Node, attrs: Node): PullRequestEvent["action"] {
  const action = optionalString(attrs, "action");
  switch (action) {
    case "open":
      return "opened";
    case "reopen":
      return "reopened";
    case "close":
    case "merge":
      return "closed";
    case "update": {
      if (optionalString(attrs, "oldrev") !== "") return "synchronize";
      const changes = optionalObject(body, "changes");
      const draft = optionalObject(changes, "draft") ?? optionalObject(changes, "work_in_progress");
      if (draft) return optionalBoolean(draft, "current") === false ? "ready_for_review" : "converted_to_draft";
      // GitLab repeats unchanged labels in `changes` on some updates: only a different list is a label change.
      const labels = optionalObject(changes, "labels");
      if (
        labels &&
        labelNames(labels, "previous", "title").join("\n") !== labelNames(labels, "current", "title").join("\n")
      )
        return "labeled";
      return "edited";
    }
    default:
      return knownAction(action || "unknown");
  }
}
