/**
 * A forge's webhook delivery as the build rules read it (docs/webhooks.md): each forge's parser (github-events.ts,
 * gitlab-events.ts, bitbucket-events.ts, gitea-events.ts) turns its payload into these events, in GitHub's
 * vocabulary, so that one set of rules (build-rules.ts) serves every forge.
 */

/** The forges whose deliveries are received, as recognised from their headers (forge-headers.ts). */
export const FORGES = ["github", "gitlab", "bitbucket", "gitea"] as const;
export type Forge = (typeof FORGES)[number];

/** A person as a forge names them: the commit author, or the user who acted. */
export interface WebhookPerson {
  name: string;
  email: string;
}

/** The commit a ref points at after a push. */
export interface WebhookCommit {
  sha: string;
  message: string;
  author: WebhookPerson | null;
}

/** Code pushed to (or deleted from) a branch or a tag. */
export interface PushEvent {
  kind: "push";
  ref: { type: "branch" | "tag"; name: string };
  /** The commit the ref points at now; null when the ref was deleted. */
  head: WebhookCommit | null;
  deleted: boolean;
}

/** The actions of a pull request the rules tell apart; any other is kept as the forge said it (`other`). */
export const PULL_REQUEST_ACTIONS = [
  "opened",
  "reopened",
  "synchronize",
  "ready_for_review",
  "converted_to_draft",
  "labeled",
  "unlabeled",
  "edited",
  "closed",
] as const;
export type PullRequestAction = (typeof PULL_REQUEST_ACTIONS)[number];

/** Something happened to a pull request (a merge request on GitLab). */
export interface PullRequestEvent {
  kind: "pull_request";
  action: PullRequestAction | { other: string };
  /** Its number (GitLab's iid), as a string. */
  number: string;
  title: string;
  /** Null when the forge does not say (Bitbucket). */
  draft: boolean | null;
  labels: string[];
  /** Where the changes come from: the branch and its head commit, and the repository holding them. */
  head: {
    branch: string;
    sha: string;
    /** The head repository's full name (owner/name), "" when the forge no longer knows it (a deleted fork). */
    repository: string;
    /** Its owner (user or namespace), which prefixes a fork's branch name. */
    owner: string;
    /** A URL of the head repository to fetch from, "" when unknown. */
    cloneUrl: string;
  };
  base: { branch: string; repository: string };
  /** Whether the head repository is another than the base repository. */
  fork: boolean;
  /** The head commit's message when the forge sends it (GitLab), else "" (the title stands for it). */
  message: string;
  /** Who opened it, or the head commit's author when the forge sends it. */
  author: WebhookPerson | null;
}

/** A deployment asked for through GitHub's API (trigger_mode `deployment`). */
export interface DeploymentEvent {
  kind: "deployment";
  id: string;
  sha: string;
  ref: string;
  task: string;
  environment: string;
  description: string;
  /** The deployment's payload as JSON text. */
  payload: string;
  creator: WebhookPerson | null;
}

/** The repository was forked (trigger_mode `fork`). */
export interface ForkEvent {
  kind: "fork";
  /** The new fork's full name. */
  fork: string;
  /** The repository's default branch, which such a build builds. */
  branch: string;
  sender: WebhookPerson | null;
}

/** One event a delivery stands for. */
export type WebhookEvent = PushEvent | PullRequestEvent | DeploymentEvent | ForkEvent;

/**
 * What a parser makes of a delivery: its events (a Bitbucket push may carry several refs), or a ping, or a reason
 * why it carries nothing to build (an event the rules do not read), or a problem with the payload (a 4xx).
 */
export type ParsedDelivery =
  | { kind: "events"; events: WebhookEvent[] }
  | { kind: "ping" }
  | { kind: "ignored"; reason: string }
  | { kind: "invalid"; problem: string };

/** The event and action a build from `event` shows as `build.source_event` and `build.source_action`. */
export function sourceOf(event: WebhookEvent): { event: string; action: string } {
  switch (event.kind) {
    case "push":
      return { event: "push", action: "" };
    case "pull_request":
      return { event: "pull_request", action: actionName(event.action) };
    case "deployment":
      return { event: "deployment", action: "created" };
    case "fork":
      return { event: "fork", action: "" };
  }
}

/** A pull request action's name, the forge's own for one the rules do not tell apart. */
export function actionName(action: PullRequestEvent["action"]): string {
  return typeof action === "string" ? action : action.other;
}
