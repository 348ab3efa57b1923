/**
 * GitHub's (and GitHub Enterprise's) deliveries as webhook events (webhook-event.ts): `push`, `pull_request`,
 * `deployment`, `fork`, `delete` (a deleted branch or tag, as a push) and `ping`. `create` builds nothing (the push
 * that comes with it does), nor does any other event. Pure.
 */
import {
  isZeroSha,
  labelNames,
  type Node,
  object,
  optionalBoolean,
  optionalObject,
  optionalString,
  person,
  refName,
  root,
  string,
  wholeNumber,
} from "./payload-reader.js";
import {
  type ParsedDelivery,
  PULL_REQUEST_ACTIONS,
  type PullRequestAction,
  type PullRequestEvent,
  type PushEvent,
} from "./webhook-event.js";

/** The events of a GitHub delivery whose X-GitHub-Event is `event`; throws PayloadProblem for a payload it cannot read. */
export function parseGitHubEvent(event: string, payload: unknown): ParsedDelivery {
  switch (event) {
    case "ping":
      return { kind: "ping" };
    case "push":
      return pushOf(root(payload));
    case "pull_request":
      return { kind: "events", events: [pullRequestOf(root(payload))] };
    case "delete":
      return deletionOf(root(payload));
    case "deployment":
      return deploymentOf(root(payload));
    case "fork":
      return forkOf(root(payload));
    case "create":
      return { kind: "ignored", reason: "A create event builds nothing: the push event that comes with it does." };
    case "merge_group":
      return { kind: "ignored", reason: "Merge queue (merge_group) events are not built yet." };
    default:
      return { kind: "ignored", reason: `GitHub "${event}" events build nothing.` };
  }
}

function pushOf(body: Node): ParsedDelivery {
  const ref = string(body, "ref");
  const target = refName(ref);
  if (!target) return { kind: "ignored", reason: `A push to ${ref} is neither a branch nor a tag: nothing to build.` };
  const after = optionalString(body, "after");
  const deleted = optionalBoolean(body, "deleted") === true || (after !== "" && isZeroSha(after));
  const headCommit = optionalObject(body, "head_commit");
  let head: PushEvent["head"] = null;
  if (!deleted) {
    if (headCommit) {
      head = {
        sha: string(headCommit, "id"),
        message: optionalString(headCommit, "message"),
        author: person(optionalObject(headCommit, "author")),
      };
    } else if (after !== "") {
      // A push that moved a ref to a commit it does not describe (a branch made from another): no message to show.
      head = { sha: after, message: "", author: person(optionalObject(body, "pusher")) };
    } else {
      return { kind: "invalid", problem: "head_commit or after must name the pushed commit" };
    }
  }
  return { kind: "events", events: [{ kind: "push", ref: target, head, deleted }] };
}

/** GitHub's `delete` event: a branch or tag was deleted, which the rules read as a push that deleted it. */
function deletionOf(body: Node): ParsedDelivery {
  const refType = string(body, "ref_type");
  if (refType !== "branch" && refType !== "tag")
    return { kind: "invalid", problem: `ref_type must be branch or tag, got "${refType}"` };
  const ref = { type: refType, name: string(body, "ref") } as const;
  return { kind: "events", events: [{ kind: "push", ref, head: null, deleted: true }] };
}

/** A GitHub pull_request payload; Gitea's is the same shape (gitea-events.ts maps its own action names first). */
export function pullRequestOf(body: Node, action = string(body, "action")): PullRequestEvent {
  const pr = object(body, "pull_request");
  const head = object(pr, "head");
  const base = object(pr, "base");
  // A deleted fork leaves head.repo null: its changes are still another repository's.
  const headRepo = optionalObject(head, "repo");
  const baseRepo = object(base, "repo");
  const headName = optionalString(headRepo, "full_name");
  const baseName = string(baseRepo, "full_name");
  const user = optionalObject(pr, "user");
  const owner = optionalObject(headRepo, "owner");
  return {
    kind: "pull_request",
    action: knownAction(action),
    number: wholeNumber(pr.value.number !== undefined ? pr : body, "number"),
    title: optionalString(pr, "title"),
    draft: optionalBoolean(pr, "draft"),
    labels: labelNames(pr, "labels"),
    head: {
      branch: string(head, "ref"),
      sha: string(head, "sha"),
      repository: headName,
      owner:
        optionalString(owner, "login") ||
        optionalString(owner, "username") ||
        headName.split("/")[0] ||
        optionalString(optionalObject(head, "user"), "login"),
      cloneUrl: optionalString(headRepo, "clone_url"),
    },
    base: { branch: string(base, "ref"), repository: baseName },
    fork: headName === "" || headName.toLowerCase() !== baseName.toLowerCase(),
    message: "",
    author: person(user, ["login", "username", "name"]),
  };
}

/** A pull request action the rules tell apart, or the forge's own name for another. */
export function knownAction(action: string): PullRequestEvent["action"] {
  return (PULL_REQUEST_ACTIONS as readonly string[]).includes(action)
    ? (action as PullRequestAction)
    : { other: action };
}

function deploymentOf(body: Node): ParsedDelivery {
  const deployment = object(body, "deployment");
  const payload = deployment.value.payload;
  return {
    kind: "events",
    events: [
      {
        kind: "deployment",
        id: optionalString(deployment, "id"),
        sha: string(deployment, "sha"),
        ref: string(deployment, "ref"),
        task: optionalString(deployment, "task"),
        environment: optionalString(deployment, "environment"),
        description: optionalString(deployment, "description"),
        payload: typeof payload === "string" ? payload : JSON.stringify(payload ?? {}),
        creator: person(optionalObject(deployment, "creator"), ["login", "name"]),
      },
    ],
  };
}

function forkOf(body: Node): ParsedDelivery {
  const forkee = object(body, "forkee");
  const repository = object(body, "repository");
  return {
    kind: "events",
    events: [
      {
        kind: "fork",
        fork: string(forkee, "full_name"),
        branch: optionalString(repository, "default_branch") || optionalString(forkee, "default_branch") || "main",
        sender: person(optionalObject(body, "sender"), ["login", "name"]),
      },
    ],
  };
}
