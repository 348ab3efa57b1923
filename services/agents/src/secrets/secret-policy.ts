import { wildcardMatch } from "@conveyor/ci-rules";
import { isMap, isScalar, isSeq, parseDocument } from "yaml";

/**
 * A cluster secret's access policy (docs/security.md#cluster-secrets), as Buildkite's "Access policies for
 * Buildkite secrets" defines it: a YAML list of rules; a rule is a mapping of claims, every one of which must be met;
 * a claim's condition is a string or a list of strings, one of which must match. The secret is read when any rule
 * matches. No policy (empty text) lets every job of the cluster read it.
 *
 * Claims honoured: `pipeline_slug`, `pipeline_id`, `build_branch` (a `*` wildcard pattern, as
 * `gh-readonly-queue/*`), `build_source`, `build_creator` (an email, any case), `cluster_queue_id` and
 * `cluster_queue_key`. Buildkite's `build_creator_team` is refused naming it (teams are not looked up here), as is
 * any other key: a policy never grants more than it says. Pure functions.
 */

/** What a job offers a policy: its build's and its queue's values (empty when it has none). */
export interface JobClaims {
  pipeline_slug: string;
  pipeline_id: string;
  build_branch: string;
  build_source: string;
  build_creator: string;
  cluster_queue_id: string;
  cluster_queue_key: string;
}

/** The claims a policy may name. */
export const POLICY_CLAIMS = [
  "pipeline_slug",
  "pipeline_id",
  "build_branch",
  "build_source",
  "build_creator",
  "cluster_queue_id",
  "cluster_queue_key",
] as const satisfies readonly (keyof JobClaims)[];

type Claim = (typeof POLICY_CLAIMS)[number];

/** One rule: each named claim's conditions. */
export type PolicyRule = Partial<Record<Claim, readonly string[]>>;

/** A parsed policy: at least one rule. */
export interface SecretPolicy {
  rules: readonly PolicyRule[];
}

/** The bounds of a policy (docs/limits.md#cluster-secrets). */
export const POLICY_LIMITS = { text: 10_000, rules: 50, conditions: 50, condition: 255 } as const;

/** A policy that cannot be used: what is wrong, naming the rule and claim. */
export class PolicyError extends Error {
  override name = "PolicyError";
}

const claimSet: ReadonlySet<string> = new Set(POLICY_CLAIMS);
const NOT_HONOURED: Record<string, string> = {
  build_creator_team: "build_creator_team is not supported here: teams are not matched by secret policies",
};

function conditionsOf(node: unknown, where: string): string[] {
  const items = isSeq(node) ? node.items : [node];
  if (isSeq(node) && items.length === 0) throw new PolicyError(`${where} has no conditions`);
  if (items.length > POLICY_LIMITS.conditions)
    throw new PolicyError(`${where} has more than ${POLICY_LIMITS.conditions} conditions`);
  return items.map((item) => {
    if (!isScalar(item) || item.value === null || typeof item.value === "object")
      throw new PolicyError(`${where} must be a string or a list of strings`);
    const text = String(item.value);
    if (text === "") throw new PolicyError(`${where} has an empty condition`);
    if (text.length > POLICY_LIMITS.condition)
      throw new PolicyError(`${where} has a condition longer than ${POLICY_LIMITS.condition} characters`);
    return text;
  });
}

/**
 * Parses a policy's text (YAML, or JSON, which is YAML): null for an empty text (no policy); a PolicyError saying
 * what is wrong otherwise. Scalars are read as their source text (`build_branch: 1.0` is "1.0").
 */
export function parsePolicy(text: string): SecretPolicy | null {
  if (text.trim() === "") return null;
  if (text.length > POLICY_LIMITS.text) throw new PolicyError(`is longer than ${POLICY_LIMITS.text} characters`);
  const doc = parseDocument(text, { schema: "failsafe", uniqueKeys: true });
  if (doc.errors.length > 0) throw new PolicyError(`is not valid YAML: ${doc.errors[0]?.message.split("\n")[0]}`);
  const root = doc.contents;
  if (!isSeq(root)) throw new PolicyError("must be a list of rules (each beginning with -)");
  if (root.items.length === 0) throw new PolicyError("has no rules");
  if (root.items.length > POLICY_LIMITS.rules) throw new PolicyError(`has more than ${POLICY_LIMITS.rules} rules`);
  const rules = root.items.map((item, i) => {
    const where = `rule ${i + 1}`;
    if (!isMap(item)) throw new PolicyError(`${where} must be a mapping of claims`);
    if (item.items.length === 0) throw new PolicyError(`${where} has no claims`);
    const rule: PolicyRule = {};
    for (const pair of item.items) {
      const name = isScalar(pair.key) ? String(pair.key.value) : "";
      const notHonoured = NOT_HONOURED[name];
      if (notHonoured) throw new PolicyError(`${where}: ${notHonoured}`);
      if (!claimSet.has(name))
        throw new PolicyError(`${where}: ${JSON.stringify(name)} is not a claim (known: ${POLICY_CLAIMS.join(", ")})`);
      rule[name as Claim] = conditionsOf(pair.value, `${where}'s ${name}`);
    }
    return rule;
  });
  return { rules };
}

function conditionMet(claim: Claim, condition: string, value: string): boolean {
  if (value === "") return false;
  switch (claim) {
    case "build_branch":
      return wildcardMatch(condition, value);
    case "build_creator":
      return condition.toLowerCase() === value.toLowerCase();
    default:
      return condition === value;
  }
}

/** Whether a rule's every claim is met by the job. */
export function ruleMatches(rule: PolicyRule, job: JobClaims): boolean {
  return Object.entries(rule).every(([claim, conditions]) =>
    (conditions ?? []).some((c) => conditionMet(claim as Claim, c, job[claim as Claim])),
  );
}

/** Whether a job may read a secret of its cluster under `policy` (null: no policy, every job may). */
export function policyAllows(policy: SecretPolicy | null, job: JobClaims): boolean {
  return policy === null || policy.rules.some((rule) => ruleMatches(rule, job));
}
