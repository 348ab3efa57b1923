import { type JobClaims, PolicyError, parsePolicy, policyAllows } from "./secret-policy.js";

const JOB: JobClaims = {
  pipeline_slug: "frontend",
  pipeline_id: "11111111-1111-4111-8111-111111111111",
  build_branch: "main",
  build_source: "webhook",
  build_creator: "Ann@Example.com",
  cluster_queue_id: "22222222-2222-4222-8222-222222222222",
  cluster_queue_key: "deploy",
};
const allows = (policy: string, job: Partial<JobClaims> = {}) => policyAllows(parsePolicy(policy), { ...JOB, ...job });

describe("parsing a policy", () => {
  it.each(["", "  \n "])("reads no policy from %p", (text) => {
    expect(parsePolicy(text)).toBeNull();
  });

  it("reads rules, single conditions and lists", () => {
    expect(parsePolicy("- pipeline_slug: a\n  build_branch: [main, develop]\n- cluster_queue_key: deploy")).toEqual({
      rules: [{ pipeline_slug: ["a"], build_branch: ["main", "develop"] }, { cluster_queue_key: ["deploy"] }],
    });
  });

  it("reads JSON, which is YAML", () => {
    expect(parsePolicy('[{"pipeline_slug": "a"}]')).toEqual({ rules: [{ pipeline_slug: ["a"] }] });
  });

  it("keeps scalars as written (1.10 stays 1.10)", () => {
    expect(parsePolicy("- build_branch: 1.10")).toEqual({ rules: [{ build_branch: ["1.10"] }] });
  });

  it.each([
    ["pipeline_slug: a", "must be a list of rules"],
    ["[]", "has no rules"],
    ["- just-a-string", "rule 1 must be a mapping of claims"],
    ["- {}", "rule 1 has no claims"],
    ["- pipeline_slug: []", "rule 1's pipeline_slug has no conditions"],
    ["- pipeline_slug: ''", "empty condition"],
    ["- pipeline_slug: {a: b}", "must be a string or a list of strings"],
    ["- pipeline_slug: [[a]]", "must be a string or a list of strings"],
    ["- pipeline_slug:", "has an empty condition"],
    ["- pipeline: a", '"pipeline" is not a claim'],
    [
      "- pipeline_slug: a\n- build_creator_team: 123e4567-e89b-12d3-a456-426614174000",
      "rule 2: build_creator_team is not supported",
    ],
    ["- pipeline_slug: a\n  pipeline_slug: b", "not valid YAML"],
    ["- [unclosed", "not valid YAML"],
    ["- pipeline_slug: &x a\n- pipeline_slug: *x", "must be a string or a list of strings"],
    [`- pipeline_slug: ${"a".repeat(256)}`, "longer than 255 characters"],
    [Array.from({ length: 51 }, (_, i) => `- pipeline_slug: p${i}`).join("\n"), "more than 50 rules"],
    [`- pipeline_slug: [${Array.from({ length: 51 }, (_, i) => `p${i}`).join(",")}]`, "more than 50 conditions"],
    [`# ${"x".repeat(10_001)}`, "longer than 10000 characters"],
  ])("refuses %p", (text, message) => {
    expect(() => parsePolicy(text)).toThrow(PolicyError);
    expect(() => parsePolicy(text)).toThrow(message);
  });
});

describe("a policy allows a job", () => {
  it("always without a policy", () => {
    expect(policyAllows(null, JOB)).toBe(true);
  });

  it("when every claim of a rule is met", () => {
    expect(allows("- pipeline_slug: frontend\n  build_branch: main")).toBe(true);
    expect(allows("- pipeline_slug: frontend\n  build_branch: main", { build_branch: "dev" })).toBe(false);
    expect(allows("- pipeline_slug: frontend\n  build_branch: main", { pipeline_slug: "backend" })).toBe(false);
  });

  it("when one condition of a claim's list matches", () => {
    const policy = "- pipeline_slug: [frontend, backend]\n  build_branch: [main, develop]";
    expect(allows(policy, { pipeline_slug: "backend", build_branch: "develop" })).toBe(true);
    expect(allows(policy, { pipeline_slug: "other" })).toBe(false);
  });

  it("when any rule matches, and only as a whole rule", () => {
    const policy = "- pipeline_slug: frontend\n  build_branch: main\n- pipeline_slug: backend\n  build_branch: develop";
    expect(allows(policy, { pipeline_slug: "backend", build_branch: "develop" })).toBe(true);
    expect(allows(policy, { pipeline_slug: "frontend", build_branch: "develop" })).toBe(false);
  });

  it("matches branches as * patterns, whole", () => {
    expect(allows("- build_branch: gh-readonly-queue/*", { build_branch: "gh-readonly-queue/main/pr-1" })).toBe(true);
    expect(allows("- build_branch: release-*", { build_branch: "release-1.2" })).toBe(true);
    expect(allows("- build_branch: release-*", { build_branch: "pre-release-1.2" })).toBe(false);
    expect(allows("- build_branch: main", { build_branch: "main-2" })).toBe(false);
    expect(allows("- build_branch: '*'", { build_branch: "" })).toBe(false);
  });

  it("matches slugs, ids, sources and queues exactly", () => {
    expect(allows("- pipeline_slug: front*")).toBe(false);
    expect(allows(`- pipeline_id: ${JOB.pipeline_id}`)).toBe(true);
    expect(allows("- build_source: api")).toBe(false);
    expect(allows("- build_source: webhook")).toBe(true);
    expect(allows(`- cluster_queue_id: ${JOB.cluster_queue_id}`)).toBe(true);
    expect(allows("- cluster_queue_key: deploy")).toBe(true);
    expect(allows("- cluster_queue_key: Deploy")).toBe(false);
  });

  it("matches the creator's email in any case, never an empty one", () => {
    expect(allows("- build_creator: ann@example.com")).toBe(true);
    expect(allows("- build_creator: bob@example.com")).toBe(false);
    expect(allows("- build_creator: ann@example.com", { build_creator: "" })).toBe(false);
  });

  it("never matches a claim the job has no value for", () => {
    expect(allows("- cluster_queue_key: deploy", { cluster_queue_key: "" })).toBe(false);
  });
});
