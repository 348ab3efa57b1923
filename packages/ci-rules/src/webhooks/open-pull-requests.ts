/**
 * What a pull request event tells of its pull request's state, which the receiver remembers between deliveries: a
 * push to the head branch of an open pull request from the pipeline's repository builds as that pull request's
 * build (build-rules.ts). Pure.
 */
import type { OpenPullRequest } from "./build-rules.js";
import type { PullRequestEvent } from "./webhook-event.js";

/** A pull request's state after an event: open or closed, from which branch, and what its builds carry. */
export interface PullRequestState {
  headBranch: string;
  fork: boolean;
  open: boolean;
  pullRequest: OpenPullRequest;
}

/** The state `event` leaves its pull request in: closed after `closed`, open after anything else. */
export function pullRequestStateOf(event: PullRequestEvent): PullRequestState {
  return {
    headBranch: event.head.branch,
    fork: event.fork,
    open: event.action !== "closed",
    pullRequest: {
      number: event.number,
      baseBranch: event.base.branch,
      repository: event.head.cloneUrl,
      labels: event.labels,
      draft: event.draft,
    },
  };
}
