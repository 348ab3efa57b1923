import { Code, ConnectError } from "@connectrpc/connect";
import { type AuthenticateAgentCredentialResponse, CredentialKind } from "@conveyor/proto/agents";
import type { IssueOidcTokenRequest } from "@conveyor/proto/oidc";
import { invalidFields } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg } from "../testing/test-app.js";

// `buildkite-agent oidc request-token` (POST /v3/jobs/{id}/oidc/tokens) and the issuer's public documents.
const acme = makeOrg("acme", "Acme");
const JOB = "44444444-0000-4000-8000-000000000001";
const OTHER_JOB = "44444444-0000-4000-8000-000000000002";
const AGENT = "66666666-0000-4000-8000-000000000001";
const JWKS = { keys: [{ kty: "RSA", kid: "k1", n: "abc", e: "AQAB", alg: "RS256", use: "sig" }] };

type Credential = Omit<AuthenticateAgentCredentialResponse, "$typeName" | "$unknown">;
const base = { organizationId: acme.id, clusterId: "c1", tokenId: "t1" };
const credentials: Record<string, Credential> = {
  bkaj_job: { ...base, kind: CredentialKind.JOB, agentId: AGENT, jobId: JOB, buildId: "b1" },
  bkaa_agent: { ...base, kind: CredentialKind.AGENT, agentId: AGENT, jobId: "", buildId: "" },
};

const issued: IssueOidcTokenRequest[] = [];
let keySetReads = 0;
let app: FastifyInstance;
beforeAll(async () => {
  ({ app } = await buildTestApp(
    { orgs: [acme], users: [], tokens: new Map(), revoked: [] },
    {
      agents: {
        authenticateAgentCredential(req) {
          const found = credentials[req.secret];
          if (!found) throw new ConnectError("nope", Code.Unauthenticated);
          return found;
        },
      },
      oidc: {
        issueOidcToken(req) {
          issued.push(req);
          if (req.lifetimeSeconds > 7200)
            throw invalidFields([{ field: "lifetime", code: "must be at most 7200 seconds" }]);
          if (req.jobId === "finished") throw new ConnectError("this job is passed", Code.FailedPrecondition);
          return { token: "header.payload.signature" };
        },
        getOidcKeySet() {
          keySetReads++;
          return { jwksJson: JSON.stringify(JWKS) };
        },
      },
    },
  ));
});
afterAll(() => app.close());

const request = (jobId: string, token: string, payload: unknown) =>
  app.inject({
    method: "POST",
    url: `/v3/jobs/${jobId}/oidc/tokens`,
    headers: { authorization: `Token ${token}` },
    payload: payload as Record<string, unknown>,
  });

describe("POST /v3/jobs/{id}/oidc/tokens", () => {
  it("asks the agents service for the job's token, with the issuer and the organization", async () => {
    const res = await request(JOB, "bkaj_job", { audience: "sts.example", lifetime: 60, claims: ["pipeline_id"] });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ token: "header.payload.signature" });
    expect(issued.at(-1)).toMatchObject({
      issuer: "http://api.test",
      jobId: JOB,
      agentId: AGENT,
      organizationSlug: "acme",
      audience: "sts.example",
      lifetimeSeconds: 60,
      claims: ["pipeline_id"],
      awsSessionTags: [],
      subjectClaim: "",
    });
  });

  it("defaults the audience to the organization's URL, as Buildkite's", async () => {
    expect((await request(JOB, "bkaj_job", {})).statusCode).toBe(200);
    expect(issued.at(-1)?.audience).toBe("http://web.test/acme");
  });

  it("takes only a job's own token, for its own job", async () => {
    const before = issued.length;
    expect((await request(OTHER_JOB, "bkaj_job", {})).statusCode).toBe(404);
    expect((await request(JOB, "bkaa_agent", {})).statusCode).toBe(401);
    expect((await request(JOB, "bkaj_nope", {})).statusCode).toBe(401);
    expect(issued.length).toBe(before);
  });

  it("refuses unknown and out-of-bounds fields by name, and says why in the message the agent prints", async () => {
    const unknown = await request(JOB, "bkaj_job", { audience: "a", scope: "admin" });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().errors).toEqual([{ field: "scope", code: "is not taken" }]);
    expect((await request(JOB, "bkaj_job", { claims: Array.from({ length: 33 }, () => "x") })).statusCode).toBe(422);
    const long = await request(JOB, "bkaj_job", { lifetime: 7201 });
    expect(long.statusCode).toBe(422);
    expect(long.json().message).toBe("The OIDC token could not be issued: lifetime must be at most 7200 seconds");
  });
});

describe("the issuer's documents", () => {
  it("serves the discovery document and the key set publicly, the key set cached briefly", async () => {
    const discovery = await app.inject({ method: "GET", url: "/.well-known/openid-configuration" });
    expect(discovery.statusCode).toBe(200);
    expect(discovery.json()).toMatchObject({
      issuer: "http://api.test",
      jwks_uri: "http://api.test/.well-known/jwks",
      id_token_signing_alg_values_supported: ["RS256"],
      claims_supported: expect.arrayContaining(["sub", "pipeline_slug", "job_id"]),
    });
    const first = await app.inject({ method: "GET", url: "/.well-known/jwks" });
    const second = await app.inject({ method: "GET", url: "/.well-known/jwks" });
    expect(first.json()).toEqual(JWKS);
    expect(second.json()).toEqual(JWKS);
    expect(keySetReads).toBe(1);
  });
});
