/**
 * The commit an agent resolved at checkout, as it reports it in the build meta-data key `buildkite:git:commit`
 * (docs/compatibility.md#the-real-commit), and what that report changes of a build created for a ref.
 */

import type { Build } from "./build.js";

/** The meta-data key under which the agent reports the commit it checked out. */
export const COMMIT_REPORT_KEY = "buildkite:git:commit";

/** A full commit SHA: SHA-1 (40 hex digits) or SHA-256 (64), lower case as git prints them. */
const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** True when `commit` names one commit for good rather than a ref such as `HEAD` or a branch. */
export function isFullSha(commit: string): boolean {
  return FULL_SHA.test(commit);
}

/** What a report says: the commit's full SHA and its whole message (subject and body). */
export interface CommitReport {
  sha: string;
  message: string;
}

/**
 * Reads the agent's report, `git log -1 --format="commit %H%nabbrev-commit %h%nAuthor: %an <%ae>%n%n%w(0,4,4)%B"`:
 * a `commit <sha>` line, other header lines up to a blank line, then the message with every line indented by four
 * spaces. Null when the first line does not carry a full SHA.
 */
export function parseCommitReport(value: string): CommitReport | null {
  const lines = value.replace(/\r\n/g, "\n").split("\n");
  const sha = /^commit ([0-9a-f]+)\s*$/.exec(lines[0] ?? "")?.[1];
  if (sha === undefined || !isFullSha(sha)) return null;
  const blank = lines.indexOf("", 1);
  const body = blank === -1 ? [] : lines.slice(blank + 1);
  const message = body
    .map((line) => (line.startsWith("    ") ? line.slice(4) : line.trimStart()))
    .join("\n")
    .trim();
  return { sha, message };
}

/** What a report does to a build: change its commit (and message), nothing, or nothing while saying why. */
export type CommitResolution =
  | { kind: "resolve"; update: Pick<Build, "commit"> & Partial<Pick<Build, "message">> }
  | { kind: "unchanged" }
  | { kind: "ignored"; reason: string };

/**
 * Only a build whose commit is not already a full SHA takes the reported one, and with it the commit's message when
 * the build was created without one; once resolved, a later report naming another commit changes nothing.
 */
export function resolveCommit(build: Pick<Build, "commit" | "message">, value: string): CommitResolution {
  const report = parseCommitReport(value);
  if (!report) return { kind: "ignored", reason: "the report does not start with a full commit SHA" };
  if (isFullSha(build.commit)) {
    return build.commit === report.sha
      ? { kind: "unchanged" }
      : { kind: "ignored", reason: `the build's commit is already ${build.commit}` };
  }
  return {
    kind: "resolve",
    update: build.message === "" ? { commit: report.sha, message: report.message } : { commit: report.sha },
  };
}
