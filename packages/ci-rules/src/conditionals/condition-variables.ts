/**
 * The variables and functions a conditional expression may use, and how each reads the build being created
 * (docs/compatibility.md#pipeline-yaml). One table serves both validation (unknown names are syntax-time errors) and evaluation.
 */
import type { BuildContext } from "./build-context.js";

/** A value of the conditional language. Lists only come from variables (labels); there are no list literals. */
export type ConditionValue = string | number | boolean | null | readonly string[];

/**
 * Variable name → reader. Values a build does not have (no tag, no pull request, no creator) are null, so
 * `build.tag != null` is the way to ask for one. Without a pull request `labels` is an empty list, so
 * `build.pull_request.labels includes "x"` is simply false.
 */
export const CONDITION_VARIABLES: Readonly<Record<string, (ctx: BuildContext) => ConditionValue>> = {
  "build.id": (ctx) => ctx.id ?? null,
  "build.number": (ctx) => ctx.number ?? null,
  "build.branch": (ctx) => ctx.branch,
  "build.state": (ctx) => ctx.state ?? null,
  "build.commit": (ctx) => ctx.commit,
  "build.message": (ctx) => ctx.message,
  "build.source": (ctx) => ctx.source,
  "build.source_event": (ctx) => ctx.sourceEvent,
  "build.source_action": (ctx) => ctx.sourceAction,
  "build.tag": (ctx) => ctx.tag,
  "build.pull_request.id": (ctx) => ctx.pullRequest?.id ?? null,
  "build.pull_request.base_branch": (ctx) => ctx.pullRequest?.baseBranch ?? null,
  "build.pull_request.draft": (ctx) => ctx.pullRequest?.draft ?? null,
  "build.pull_request.labels": (ctx) => ctx.pullRequest?.labels ?? [],
  "build.pull_request.repository": (ctx) => ctx.pullRequest?.repository ?? null,
  "build.pull_request.repository.fork": (ctx) => ctx.pullRequest?.fork ?? null,
  "build.creator.id": (ctx) => ctx.creator?.id ?? null,
  "build.creator.name": (ctx) => ctx.creator?.name ?? null,
  "build.creator.email": (ctx) => ctx.creator?.email ?? null,
  "build.author.name": (ctx) => ctx.author?.name ?? null,
  "build.author.email": (ctx) => ctx.author?.email ?? null,
  "pipeline.id": (ctx) => ctx.pipeline.id,
  "pipeline.slug": (ctx) => ctx.pipeline.slug,
  "pipeline.default_branch": (ctx) => ctx.pipeline.defaultBranch,
  "organization.id": (ctx) => ctx.organization.id,
  "organization.slug": (ctx) => ctx.organization.slug,
};

/** Function name → number of arguments. `build.env("NAME")` is the only function. */
export const CONDITION_FUNCTIONS: Readonly<Record<string, number>> = { "build.env": 1 };

/** Whether `name` is a known variable (own property: "constructor" and friends are not variables). */
export function isConditionVariable(name: string): boolean {
  return Object.hasOwn(CONDITION_VARIABLES, name);
}

/** Whether `name` is a known function. */
export function isConditionFunction(name: string): boolean {
  return Object.hasOwn(CONDITION_FUNCTIONS, name);
}

/** The value of `build.env(name)`: the build's environment variable, or null when it is not set. */
export function buildEnvValue(ctx: BuildContext, name: string): string | null {
  return Object.hasOwn(ctx.env, name) ? (ctx.env[name] ?? null) : null;
}
