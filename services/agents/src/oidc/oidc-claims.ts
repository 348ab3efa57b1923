/**
 * The claims of a job's OIDC token (docs/security.md#oidc-tokens), as Buildkite's agent OIDC tokens carry them: the
 * standard ones, the job's (organization, pipeline, build, step, job, agent), and the optional claims and AWS
 * session tags a job asks for. Pure; a request that cannot be met is a list of field problems, nothing signed.
 */

/** What the token says about the job: read from the job and its build, never from the job's env. */
export interface OidcJobFacts {
  organizationId: string;
  organizationSlug: string;
  pipelineId: string;
  pipelineSlug: string;
  buildNumber: number;
  buildBranch: string;
  /** Empty when the build is not of a tag. */
  buildTag: string;
  buildCommit: string;
  buildSource: string;
  /** Empty when the step has no key. */
  stepKey: string;
  jobId: string;
  agentId: string;
  /** Empty for a job outside clusters. */
  clusterId: string;
  clusterName: string;
  queueId: string;
  queueKey: string;
  /** The agent's tags, `key=value`. */
  agentTags: string[];
}

/** What the job asked for (`buildkite-agent oidc request-token`). */
export interface OidcTokenAsk {
  issuer: string;
  audience: string;
  /** Seconds; 0 for the default. */
  lifetimeSeconds: number;
  claims: string[];
  awsSessionTags: string[];
  subjectClaim: string;
}

export interface OidcLimits {
  defaultLifetimeS: number;
  maxLifetimeS: number;
}

/** Bounds of a request: Buildkite's are not published; these keep a token well under HTTP header sizes. */
export const OIDC_REQUEST_LIMITS = { maxAudienceLength: 1_000, maxClaims: 32, maxClaimLength: 128 };

/** The claims a job may add with `--claim` (and `agent_tag:NAME`). */
export const OPTIONAL_CLAIMS = [
  "organization_id",
  "pipeline_id",
  "cluster_id",
  "cluster_name",
  "queue_id",
  "queue_key",
];
/** The claims `--aws-session-tag` may name (each also added to the token as a claim). */
export const SESSION_TAG_CLAIMS = [
  "organization_slug",
  "organization_id",
  "pipeline_slug",
  "pipeline_id",
  "build_number",
  "build_branch",
  "build_tag",
  "build_commit",
  "cluster_id",
  "cluster_name",
  "queue_id",
  "queue_key",
];
/** The immutable claims `--subject-claim` may make the subject. */
export const SUBJECT_CLAIMS = ["organization_id", "pipeline_id", "cluster_id", "queue_id"];

const AGENT_TAG = "agent_tag:";

export type OidcClaims = Record<string, unknown>;

export type OidcAnswer =
  | { ok: true; claims: OidcClaims }
  | { ok: false; errors: Array<{ field: string; code: string }> };

const orNull = (s: string) => (s === "" ? null : s);

/** The value of an optional or session-tag claim; undefined for a name that is not one. */
function claimValue(facts: OidcJobFacts, name: string): string | number | null | undefined {
  if (name.startsWith(AGENT_TAG)) {
    const tag = name.slice(AGENT_TAG.length);
    if (tag === "") return undefined;
    const found = facts.agentTags.find((t) => t.startsWith(`${tag}=`));
    return found === undefined ? null : found.slice(tag.length + 1);
  }
  switch (name) {
    case "organization_slug":
      return facts.organizationSlug;
    case "organization_id":
      return facts.organizationId;
    case "pipeline_slug":
      return facts.pipelineSlug;
    case "pipeline_id":
      return facts.pipelineId;
    case "build_number":
      return facts.buildNumber;
    case "build_branch":
      return facts.buildBranch;
    case "build_tag":
      return orNull(facts.buildTag);
    case "build_commit":
      return facts.buildCommit;
    case "cluster_id":
      return orNull(facts.clusterId);
    case "cluster_name":
      return orNull(facts.clusterName);
    case "queue_id":
      return orNull(facts.queueId);
    case "queue_key":
      return orNull(facts.queueKey);
    default:
      return undefined;
  }
}

/** Buildkite's compound subject: organization, pipeline, git ref, commit and step key. */
export function compoundSubject(facts: OidcJobFacts): string {
  const ref = facts.buildTag !== "" ? `refs/tags/${facts.buildTag}` : `refs/heads/${facts.buildBranch}`;
  return `organization:${facts.organizationSlug}:pipeline:${facts.pipelineSlug}:ref:${ref}:commit:${facts.buildCommit}:step:${facts.stepKey}`;
}

function checkNames(
  names: string[],
  field: string,
  allowed: readonly string[],
  errors: Array<{ field: string; code: string }>,
): void {
  if (names.length > OIDC_REQUEST_LIMITS.maxClaims) {
    errors.push({ field, code: `has too many entries (maximum is ${OIDC_REQUEST_LIMITS.maxClaims})` });
    return;
  }
  for (const name of names) {
    const tag = name.startsWith(AGENT_TAG) && name.length > AGENT_TAG.length;
    if (name.length > OIDC_REQUEST_LIMITS.maxClaimLength || (!tag && !allowed.includes(name))) {
      errors.push({
        field,
        code: `${JSON.stringify(name.slice(0, OIDC_REQUEST_LIMITS.maxClaimLength))} is not a claim that can be added (${allowed.join(", ")}, agent_tag:NAME)`,
      });
    }
  }
}

/** The token's claims for `facts` at `nowS` (seconds), or what is wrong with the request. */
export function oidcClaims(facts: OidcJobFacts, ask: OidcTokenAsk, nowS: number, limits: OidcLimits): OidcAnswer {
  const errors: Array<{ field: string; code: string }> = [];
  if (ask.audience.length > OIDC_REQUEST_LIMITS.maxAudienceLength) {
    errors.push({
      field: "audience",
      code: `is too long (maximum is ${OIDC_REQUEST_LIMITS.maxAudienceLength} characters)`,
    });
  }
  if (!Number.isInteger(ask.lifetimeSeconds) || ask.lifetimeSeconds < 0) {
    errors.push({ field: "lifetime", code: "must be a non-negative number of seconds" });
  } else if (ask.lifetimeSeconds > limits.maxLifetimeS) {
    errors.push({ field: "lifetime", code: `must be at most ${limits.maxLifetimeS} seconds` });
  }
  checkNames(ask.claims, "claims", OPTIONAL_CLAIMS, errors);
  checkNames(ask.awsSessionTags, "aws_session_tags", SESSION_TAG_CLAIMS, errors);
  if (ask.subjectClaim !== "" && !SUBJECT_CLAIMS.includes(ask.subjectClaim)) {
    errors.push({ field: "subject_claim", code: `must be one of ${SUBJECT_CLAIMS.join(", ")}` });
  } else if (ask.subjectClaim !== "" && claimValue(facts, ask.subjectClaim) === null) {
    errors.push({ field: "subject_claim", code: `has no value for this job (${ask.subjectClaim})` });
  }
  if (errors.length > 0) return { ok: false, errors };

  const lifetime = ask.lifetimeSeconds === 0 ? limits.defaultLifetimeS : ask.lifetimeSeconds;
  const claims: OidcClaims = {
    iss: ask.issuer,
    sub: ask.subjectClaim !== "" ? String(claimValue(facts, ask.subjectClaim)) : compoundSubject(facts),
    aud: ask.audience,
    iat: nowS,
    nbf: nowS,
    exp: nowS + lifetime,
    organization_slug: facts.organizationSlug,
    pipeline_slug: facts.pipelineSlug,
    build_number: facts.buildNumber,
    build_branch: facts.buildBranch,
    build_tag: orNull(facts.buildTag),
    build_commit: facts.buildCommit,
    build_source: facts.buildSource,
    step_key: orNull(facts.stepKey),
    job_id: facts.jobId,
    agent_id: facts.agentId,
    runner_environment: "self-hosted",
  };
  for (const name of [...ask.claims, ...ask.awsSessionTags]) claims[name] = claimValue(facts, name);
  if (ask.awsSessionTags.length > 0) {
    // AWS reads session tags from this claim: each tag's value a one-element list of strings; a claim without a
    // value makes no tag.
    const principalTags: Record<string, string[]> = {};
    for (const name of ask.awsSessionTags) {
      const value = claimValue(facts, name);
      if (value !== null && value !== undefined) principalTags[name] = [String(value)];
    }
    claims["https://aws.amazon.com/tags"] = {
      principal_tags: principalTags,
      transitive_tag_keys: Object.keys(principalTags),
    };
  }
  return { ok: true, claims };
}
