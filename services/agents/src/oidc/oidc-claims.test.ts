import { compoundSubject, type OidcJobFacts, type OidcTokenAsk, oidcClaims } from "./oidc-claims.js";

const facts: OidcJobFacts = {
  organizationId: "org-id",
  organizationSlug: "acme",
  pipelineId: "pipe-id",
  pipelineSlug: "app",
  buildNumber: 7,
  buildBranch: "main",
  buildTag: "",
  buildCommit: "abc123",
  buildSource: "api",
  stepKey: "deploy",
  jobId: "job-id",
  agentId: "agent-id",
  clusterId: "cluster-id",
  clusterName: "Default",
  queueId: "queue-id",
  queueKey: "default",
  agentTags: ["queue=default", "os=linux"],
};
const ask: OidcTokenAsk = {
  issuer: "https://ci.example",
  audience: "sts.example",
  lifetimeSeconds: 0,
  claims: [],
  awsSessionTags: [],
  subjectClaim: "",
};
const limits = { defaultLifetimeS: 300, maxLifetimeS: 7200 };
const NOW = 1_700_000_000;

function claims(over: Partial<OidcTokenAsk> = {}, f: Partial<OidcJobFacts> = {}) {
  const answer = oidcClaims({ ...facts, ...f }, { ...ask, ...over }, NOW, limits);
  if (!answer.ok) throw new Error(JSON.stringify(answer.errors));
  return answer.claims;
}

function problems(over: Partial<OidcTokenAsk>) {
  const answer = oidcClaims(facts, { ...ask, ...over }, NOW, limits);
  return answer.ok ? [] : answer.errors.map((e) => e.field);
}

describe("OIDC claims", () => {
  it("carries Buildkite's claims for the job", () => {
    expect(claims()).toEqual({
      iss: "https://ci.example",
      sub: "organization:acme:pipeline:app:ref:refs/heads/main:commit:abc123:step:deploy",
      aud: "sts.example",
      iat: NOW,
      nbf: NOW,
      exp: NOW + 300,
      organization_slug: "acme",
      pipeline_slug: "app",
      build_number: 7,
      build_branch: "main",
      build_tag: null,
      build_commit: "abc123",
      build_source: "api",
      step_key: "deploy",
      job_id: "job-id",
      agent_id: "agent-id",
      runner_environment: "self-hosted",
    });
  });

  it("names a tag's ref in the subject, and leaves the step empty without a key", () => {
    expect(compoundSubject({ ...facts, buildTag: "v1.0.0", stepKey: "" })).toBe(
      "organization:acme:pipeline:app:ref:refs/tags/v1.0.0:commit:abc123:step:",
    );
    expect(claims({}, { stepKey: "", buildTag: "v1" })).toMatchObject({ step_key: null, build_tag: "v1" });
  });

  it("uses the lifetime asked for, up to the bound", () => {
    expect(claims({ lifetimeSeconds: 60 }).exp).toBe(NOW + 60);
    expect(claims({ lifetimeSeconds: 7200 }).exp).toBe(NOW + 7200);
    expect(problems({ lifetimeSeconds: 7201 })).toEqual(["lifetime"]);
    expect(problems({ lifetimeSeconds: -1 })).toEqual(["lifetime"]);
  });

  it("adds the optional claims asked for, null where the job has no value", () => {
    expect(
      claims({ claims: ["organization_id", "pipeline_id", "cluster_name", "queue_key", "agent_tag:os"] }),
    ).toMatchObject({
      organization_id: "org-id",
      pipeline_id: "pipe-id",
      cluster_name: "Default",
      queue_key: "default",
      "agent_tag:os": "linux",
    });
    expect(claims({ claims: ["cluster_id", "agent_tag:missing"] }, { clusterId: "" })).toMatchObject({
      cluster_id: null,
      "agent_tag:missing": null,
    });
  });

  it("refuses claims it cannot add, naming the field", () => {
    expect(problems({ claims: ["job_secret"] })).toEqual(["claims"]);
    expect(problems({ claims: ["agent_tag:"] })).toEqual(["claims"]);
    expect(problems({ claims: Array.from({ length: 33 }, () => "pipeline_id") })).toEqual(["claims"]);
    expect(problems({ awsSessionTags: ["job_id"] })).toEqual(["aws_session_tags"]);
    expect(problems({ audience: "a".repeat(1001) })).toEqual(["audience"]);
  });

  it("makes AWS session tags of the claims named, skipping those without a value", () => {
    expect(claims({ awsSessionTags: ["organization_slug", "build_number", "build_tag"] })).toMatchObject({
      organization_slug: "acme",
      build_number: 7,
      "https://aws.amazon.com/tags": {
        principal_tags: { organization_slug: ["acme"], build_number: ["7"] },
        transitive_tag_keys: ["organization_slug", "build_number"],
      },
    });
  });

  it("uses an immutable claim as the subject when asked", () => {
    expect(claims({ subjectClaim: "pipeline_id" }).sub).toBe("pipe-id");
    expect(problems({ subjectClaim: "build_branch" })).toEqual(["subject_claim"]);
    const answer = oidcClaims({ ...facts, clusterId: "" }, { ...ask, subjectClaim: "cluster_id" }, NOW, limits);
    expect(answer.ok).toBe(false);
  });
});
