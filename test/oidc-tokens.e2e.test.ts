import { Role } from "@conveyor/proto/identity";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { eventually, localRepository, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// OIDC tokens for jobs (docs/security.md#oidc-tokens) with the real agent: `buildkite-agent oidc request-token` in a
// job gets a JWT that a standard JOSE library verifies against the issuer's discovery document and key set, with
// Buildkite's claims; the job's token cannot get one for another organization's job, nor for its own once finished.

jest.setTimeout(240_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let other: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
let otherClusterId: string;
let repository: string;

beforeAll(async () => {
  const scopes = ["read_builds", "write_builds", "write_pipelines", "read_build_logs"];
  [org, other] = await Promise.all([
    arrangeOrgUser({ scopes, role: Role.ADMIN }),
    arrangeOrgUser({ scopes, role: Role.ADMIN }),
  ]);
  [clusterId, otherClusterId] = await Promise.all([
    arrangeCluster(org.organization.id),
    arrangeCluster(other.organization.id),
  ]);
  repository = localRepository();
  const agentToken = (await agents.createAgentToken({ organizationId: org.organization.id, clusterId })).secret;
  startAgent({ token: agentToken });
}, 120_000);
afterAll(stopAllAgents);

const base = (o: typeof org) => `/v2/organizations/${o.organization.slug}`;

async function pipelineAndBuild(
  o: typeof org,
  cluster: string,
  configuration: string,
): Promise<{ slug: string; build: Json }> {
  const created = await send("POST", `${base(o)}/pipelines`, o.secret, {
    name: unique("OIDC"),
    repository,
    cluster_id: cluster,
    configuration,
  });
  expect(created.status).toBe(201);
  const slug = created.body.slug as string;
  const build = await send("POST", `${base(o)}/pipelines/${slug}/builds`, o.secret, { commit: "HEAD", branch: "main" });
  expect(build.status).toBe(201);
  return { slug, build: build.body };
}

const getBuild = async (o: typeof org, slug: string, n: number): Promise<Json> =>
  (await send("GET", `${base(o)}/pipelines/${slug}/builds/${n}`, o.secret)).body;

/** A call of the agent API with a job's token. */
const agentCall = (path: string, token: string, body: unknown) =>
  fetch(`${stack.apiUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Token ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

// The job keeps its token and two OIDC tokens in the build's meta-data, then waits for the test to say `release`, so
// that the test can use its token while it runs and after it finished. (The agent would redact its own token from
// meta-data, hence --redacted-vars=''; the OIDC tokens, printed into a variable, are not redacted there.)
const PIPELINE = `
steps:
  - key: deploy
    label: deploy
    command: |
      set -e
      buildkite-agent meta-data set --redacted-vars='' job-token "$BUILDKITE_AGENT_ACCESS_TOKEN"
      buildkite-agent meta-data set oidc-token "$(buildkite-agent oidc request-token --audience sts.example)"
      buildkite-agent meta-data set oidc-claims "$(buildkite-agent oidc request-token --lifetime 60 --claim organization_id,pipeline_id --aws-session-tag organization_slug)"
      if buildkite-agent oidc request-token --lifetime 999999 2>oidc-refused.txt; then exit 3; fi
      cat oidc-refused.txt
      until buildkite-agent meta-data exists release; do sleep 1; done
`;

describe("OIDC tokens with the real agent", () => {
  it("are verified against the served discovery document and key set, with Buildkite's claims; other jobs' and finished jobs' are refused", async () => {
    const discovery = await fetch(`${stack.apiUrl}/.well-known/openid-configuration`);
    expect(discovery.status).toBe(200);
    const document = (await discovery.json()) as Json;
    expect(document).toMatchObject({
      issuer: stack.apiUrl,
      jwks_uri: `${stack.apiUrl}/.well-known/jwks`,
      id_token_signing_alg_values_supported: ["RS256"],
    });
    const jwks = createRemoteJWKSet(new URL(document.jwks_uri));

    const { slug, build } = await pipelineAndBuild(org, clusterId, PIPELINE);
    const meta = await eventually(
      "the job's tokens in meta-data",
      async () => {
        const b = await getBuild(org, slug, build.number);
        return b.meta_data?.["oidc-claims"] ? (b.meta_data as Record<string, string>) : undefined;
      },
      120_000,
    );
    const running = await getBuild(org, slug, build.number);
    const job = running.jobs[0] as Json;

    const { payload, protectedHeader } = await jwtVerify(meta["oidc-token"] ?? "", jwks, {
      issuer: document.issuer,
      audience: "sts.example",
    });
    expect(protectedHeader).toMatchObject({ alg: "RS256", typ: "JWT" });
    expect(typeof protectedHeader.kid).toBe("string");
    expect(payload).toMatchObject({
      sub: `organization:${org.organization.slug}:pipeline:${slug}:ref:refs/heads/main:commit:${running.commit}:step:deploy`,
      organization_slug: org.organization.slug,
      pipeline_slug: slug,
      build_number: build.number,
      build_branch: "main",
      build_tag: null,
      build_commit: running.commit,
      build_source: "api",
      step_key: "deploy",
      job_id: job.id,
      agent_id: job.agent.id,
      runner_environment: "self-hosted",
    });
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(300);
    expect(payload.nbf).toBe(payload.iat);
    expect(typeof payload.jti).toBe("string");
    expect(payload).not.toHaveProperty("organization_id");

    // Optional claims and AWS session tags, and a lifetime of its own; without --audience, the organization's URL.
    const withClaims = await jwtVerify(meta["oidc-claims"] ?? "", jwks, { issuer: document.issuer });
    expect(withClaims.payload).toMatchObject({
      aud: expect.stringMatching(new RegExp(`/${org.organization.slug}$`)),
      organization_id: org.organization.id,
      pipeline_id: running.pipeline.id,
      "https://aws.amazon.com/tags": {
        principal_tags: { organization_slug: [org.organization.slug] },
        transitive_tag_keys: ["organization_slug"],
      },
    });
    expect((withClaims.payload.exp ?? 0) - (withClaims.payload.iat ?? 0)).toBe(60);

    // The job's own token while it runs: a token for its job; for another organization's job, nothing.
    const jobToken = meta["job-token"] ?? "";
    const own = await agentCall(`/v3/jobs/${job.id}/oidc/tokens`, jobToken, { audience: "sts.example" });
    expect(own.status).toBe(200);
    await expect(
      jwtVerify(((await own.json()) as Json).token, jwks, { audience: "sts.example" }),
    ).resolves.toBeDefined();
    const theirs = await pipelineAndBuild(other, otherClusterId, "steps:\n  - command: 'true'\n");
    const theirJob = theirs.build.jobs[0].id as string;
    expect((await agentCall(`/v3/jobs/${theirJob}/oidc/tokens`, jobToken, { audience: "sts.example" })).status).toBe(
      404,
    );
    // Fields the agent does not send are refused by name, and nothing is signed.
    const unknown = await agentCall(`/v3/jobs/${job.id}/oidc/tokens`, jobToken, { audience: "a", scope: "admin" });
    expect(unknown.status).toBe(422);

    // The job lets itself finish; its token is then refused.
    const release = await agentCall(`/v3/jobs/${job.id}/data/set`, jobToken, { key: "release", value: "1" });
    expect(release.ok).toBe(true);
    const finished = await eventually(
      "the build to pass",
      async () => {
        const b = await getBuild(org, slug, build.number);
        return b.state === "passed" || b.state === "failed" ? b : undefined;
      },
      60_000,
    );
    expect(finished.state).toBe("passed");
    const log = await fetch(
      `${stack.apiUrl}${base(org)}/pipelines/${slug}/builds/${build.number}/jobs/${job.id}/log.txt`,
      { headers: { authorization: `Bearer ${org.secret}` } },
    );
    expect(await log.text()).toMatch(/lifetime[\s\S]*at most 7200 seconds/);
    await eventually("the finished job's token to be refused", async () => {
      const res = await agentCall(`/v3/jobs/${job.id}/oidc/tokens`, jobToken, { audience: "sts.example" });
      return res.status === 401 || res.status === 422 ? res.status : undefined;
    });
    expect(decodeProtectedHeader(meta["oidc-token"] ?? "").kid).toBe(protectedHeader.kid);
  });
});
