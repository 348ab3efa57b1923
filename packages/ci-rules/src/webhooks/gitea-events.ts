/**
 * Gitea's and Forgejo's deliveries as webhook events (webhook-event.ts). Their payloads follow GitHub's, with their
 * own event and action names: `push`; `delete` (a deleted branch or tag, as a push); `create` builds nothing (its
 * push does); the pull request events `pull_request`, `pull_request_sync` (action `synchronized`) and
 * `pull_request_label` (`label_updated`, `label_cleared`), and the other `pull_request_*` events, whose actions the
 * rules do not build. Pure.
 */
import { pullRequestOf } from "./github-events.js";
import {
  isZeroSha,
  type Node,
  optionalObject,
  optionalString,
  person,
  refName,
  root,
  string,
} from "./payload-reader.js";
import type { ParsedDelivery } from "./webhook-event.js";

/** Gitea's pull request action names that GitHub names otherwise. */
const ACTIONS: Record<string, string> = {
  synchronized: "synchronize",
  label_updated: "labeled",
  label_cleared: "unlabeled",
};

/** The events of a Gitea or Forgejo delivery whose X-Gitea-Event is `event`; throws PayloadProblem when unreadable. */
export function parseGiteaEvent(event: string, payload: unknown): ParsedDelivery {
  if (event === "push") return pushOf(root(payload));
  if (event === "delete") return deletionOf(root(payload));
  if (event === "create")
    return { kind: "ignored", reason: "A create event builds nothing: the push event that comes with it does." };
  if (event === "pull_request" || event.startsWith("pull_request_")) {
    const body = root(payload);
    const action = string(body, "action");
    return { kind: "events", events: [pullRequestOf(body, ACTIONS[action] ?? action)] };
  }
  return { kind: "ignored", reason: `Gitea "${event}" events build nothing.` };
}

function pushOf(body: Node): ParsedDelivery {
  const ref = string(body, "ref");
  const target = refName(ref);
  if (!target) return { kind: "ignored", reason: `A push to ${ref} is neither a branch nor a tag: nothing to build.` };
  const after = optionalString(body, "after");
  if (after !== "" && isZeroSha(after)) {
    return { kind: "events", events: [{ kind: "push", ref: target, head: null, deleted: true }] };
  }
  const headCommit = optionalObject(body, "head_commit");
  const sha = optionalString(headCommit, "id") || after;
  if (sha === "") return { kind: "invalid", problem: "head_commit or after must name the pushed commit" };
  const head = {
    sha,
    message: optionalString(headCommit, "message"),
    author:
      person(optionalObject(headCommit, "author")) ?? person(optionalObject(body, "pusher"), ["full_name", "login"]),
  };
  return { kind: "events", events: [{ kind: "push", ref: target, head, deleted: false }] };
}

function deletionOf(body: Node): ParsedDelivery {
  const refType = string(body, "ref_type");
  if (refType !== "branch" && refType !== "tag")
    return { kind: "invalid", problem: `ref_type must be branch or tag, got "${refType}"` };
  const ref = { type: refType, name: string(body, "ref") } as const;
  return { kind: "events", events: [{ kind: "push", ref, head: null, deleted: true }] };
}
