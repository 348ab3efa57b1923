/**
 * Bitbucket Cloud's deliveries as webhook events (webhook-event.ts): `repo:push`, one push event per changed ref
 * (a push may move several), and `pullrequest:created` (opened), `pullrequest:updated` (synchronize: Bitbucket does
 * not say whether commits came), `pullrequest:fulfilled` and `pullrequest:rejected` (closed). Pure.
 */
import {
  type Node,
  object,
  objects,
  optionalBoolean,
  optionalObject,
  optionalString,
  rawPerson,
  root,
  string,
  wholeNumber,
} from "./payload-reader.js";
import type { ParsedDelivery, PullRequestEvent, PushEvent, WebhookPerson } from "./webhook-event.js";

const PULL_REQUEST_ACTIONS: Record<string, PullRequestEvent["action"]> = {
  "pullrequest:created": "opened",
  "pullrequest:updated": "synchronize",
  "pullrequest:fulfilled": "closed",
  "pullrequest:rejected": "closed",
};

/** The events of a Bitbucket delivery whose X-Event-Key is `event`; throws PayloadProblem for a payload it cannot read. */
export function parseBitbucketEvent(event: string, payload: unknown): ParsedDelivery {
  if (event === "repo:push") return pushOf(root(payload));
  const action = PULL_REQUEST_ACTIONS[event];
  if (action) return { kind: "events", events: [pullRequestOf(root(payload), action)] };
  return { kind: "ignored", reason: `Bitbucket "${event}" events build nothing.` };
}

function pushOf(body: Node): ParsedDelivery {
  const events: PushEvent[] = [];
  for (const change of objects(object(body, "push"), "changes")) {
    const now = optionalObject(change, "new");
    const before = optionalObject(change, "old");
    const ref = now ?? before;
    if (!ref) continue;
    const type = optionalString(ref, "type");
    const name = string(ref, "name");
    // Bitbucket calls an annotated tag "annotated_tag".
    const kind = type === "branch" ? "branch" : type === "tag" || type === "annotated_tag" ? "tag" : null;
    if (!kind) continue;
    if (!now) {
      events.push({ kind: "push", ref: { type: kind, name }, head: null, deleted: true });
      continue;
    }
    const target = object(now, "target");
    events.push({
      kind: "push",
      ref: { type: kind, name },
      head: { sha: string(target, "hash"), message: optionalString(target, "message"), author: authorOf(target) },
      deleted: false,
    });
  }
  if (events.length === 0) return { kind: "ignored", reason: "The push changed no branch or tag: nothing to build." };
  return { kind: "events", events };
}

function pullRequestOf(body: Node, action: PullRequestEvent["action"]): PullRequestEvent {
  const pr = object(body, "pullrequest");
  const source = object(pr, "source");
  const destination = object(pr, "destination");
  const sourceRepo = optionalObject(source, "repository");
  const sourceName = optionalString(sourceRepo, "full_name");
  const destinationName = string(object(destination, "repository"), "full_name");
  const html = optionalObject(optionalObject(sourceRepo, "links"), "html");
  const author = optionalObject(pr, "author");
  const authorName = optionalString(author, "display_name") || optionalString(author, "nickname");
  return {
    kind: "pull_request",
    action,
    number: wholeNumber(pr, "id"),
    title: optionalString(pr, "title"),
    draft: optionalBoolean(pr, "draft"),
    labels: [],
    head: {
      branch: string(object(source, "branch"), "name"),
      sha: string(object(source, "commit"), "hash"),
      repository: sourceName,
      owner: sourceName.split("/")[0] ?? "",
      cloneUrl: optionalString(html, "href"),
    },
    base: { branch: string(object(destination, "branch"), "name"), repository: destinationName },
    fork: sourceName === "" || sourceName.toLowerCase() !== destinationName.toLowerCase(),
    message: "",
    author: authorName ? { name: authorName, email: "" } : null,
  };
}

/** A commit's author: git's "Name <email>", or the Bitbucket user's display name. */
function authorOf(commit: Node): WebhookPerson | null {
  const author = optionalObject(commit, "author");
  const raw = optionalString(author, "raw");
  if (raw !== "") return rawPerson(raw);
  const name = optionalString(optionalObject(author, "user"), "display_name");
  return name === "" ? null : { name, email: "" };
}
