import { envProblems, type FieldProblem, MAX_PULL_REQUEST_ID, TEXT_LIMITS, textProblem } from "@conveyor/runtime";

/** The most labels a build's pull request may carry: forges allow far fewer on one pull request. */
const MAX_LABELS = 100;

/** What a client sends to create a build, as far as its text is judged here. */
export interface BuildInput {
  commit: string;
  branch: string;
  message: string;
  env: Readonly<Record<string, string>>;
  metaData: Readonly<Record<string, string>>;
  pullRequestId: string;
  pullRequestBaseBranch: string;
  pullRequestRepository: string;
  pullRequestLabels: readonly string[];
  author?: { name: string; email: string };
}

/**
 * Why a build cannot be created from this input (422 field problems), or none. Commits and branches are one-line
 * references without control characters (a NUL or an escape would reach the agent's git and shell); the message may
 * span lines; env names are what a process environment can hold (never "", "A=B" or a NUL: an agent would export
 * them) with Buildkite's bounds; pull request numbers are decimal integers a JSON number holds exactly.
 */
export function buildInputProblems(input: BuildInput): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const text = (field: string, value: string, rule: Parameters<typeof textProblem>[1]) => {
    const problem = textProblem(value, rule);
    if (problem) problems.push({ field, code: problem });
  };
  const commit = input.commit.trim();
  const branch = input.branch.trim();
  if (commit === "") problems.push({ field: "commit", code: "can't be blank" });
  else text("commit", commit, { max: TEXT_LIMITS.branch });
  if (branch === "") problems.push({ field: "branch", code: "can't be blank" });
  else text("branch", branch, { max: TEXT_LIMITS.branch });
  text("message", input.message, { max: TEXT_LIMITS.messageBytes, bytes: true, multiline: true });
  problems.push(...envProblems(input.env, "env", { names: "any" }));
  for (const [key, value] of Object.entries(input.metaData)) {
    const field = `meta_data.${[...key]
      .slice(0, 64)
      .join("")
      .replace(/\p{Cc}/gu, "?")}`;
    if (key.trim() === "") problems.push({ field: "meta_data", code: "keys can't be blank" });
    else text(field, key, { max: TEXT_LIMITS.name });
    if (value.includes("\u0000")) problems.push({ field, code: "must not contain NUL characters" });
  }
  const pullRequest = input.pullRequestId;
  if (pullRequest !== "" && !(/^\d{1,16}$/.test(pullRequest) && Number(pullRequest) <= MAX_PULL_REQUEST_ID)) {
    problems.push({ field: "pull_request_id", code: "must be a pull request number" });
  }
  text("pull_request_base_branch", input.pullRequestBaseBranch, { max: TEXT_LIMITS.branch });
  text("pull_request_repository", input.pullRequestRepository, { max: TEXT_LIMITS.repository });
  if (input.pullRequestLabels.length > MAX_LABELS) {
    problems.push({ field: "pull_request_labels", code: `can't have more than ${MAX_LABELS} labels` });
  }
  for (const label of input.pullRequestLabels) {
    if (label.trim() === "") problems.push({ field: "pull_request_labels", code: "can't contain blank labels" });
    else text("pull_request_labels", label, { max: TEXT_LIMITS.name });
  }
  if (input.author) {
    text("author.name", input.author.name, { max: TEXT_LIMITS.name });
    text("author.email", input.author.email, { max: TEXT_LIMITS.name });
  }
  return problems;
}
