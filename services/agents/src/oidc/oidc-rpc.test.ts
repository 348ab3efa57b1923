import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { type Build, BuildSchema, type Job, JobSchema } from "@conveyor/proto/builds";
import { OidcService } from "@conveyor/proto/oidc";
import { fieldErrorsOf, keyRingFrom, notFound } from "@conveyor/runtime";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { logger } from "../test-support.js";
import { createMemoryOidcKeyRepository } from "./oidc-key-repository.js";
import { createOidc } from "./oidc-service.js";

const ORG = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
const JOB = "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee";
const AGENT = "ffffffff-ffff-4fff-8fff-ffffffffffff";
const ISSUER = "https://ci.example";

async function world(opts: { keyRing?: boolean } = {}) {
  let clock = Date.parse("2026-03-01T00:00:00Z");
  const now = () => new Date(clock);
  const keys = createMemoryOidcKeyRepository();
  const job: Job = create(JobSchema, {
    id: JOB,
    organizationId: ORG,
    pipelineId: "pipeline-1",
    buildNumber: 7,
    stepKey: "deploy",
    state: "running",
    agent: { id: AGENT },
  });
  const build: Build = create(BuildSchema, {
    number: 7,
    pipelineSlug: "frontend",
    branch: "main",
    commit: "abc",
    source: "api",
  });
  const oidc = createOidc({
    keys,
    builds: {
      getJob: async (req) => {
        if (req.jobId !== job.id) throw notFound("job");
        return { job } as never;
      },
      getBuild: async () => ({ build }) as never,
    },
    clusters: { findCluster: async () => null },
    config: {
      keyRing: opts.keyRing === false ? null : keyRingFrom(randomBytes(32).toString("base64"), ""),
      defaultLifetimeS: 300,
      maxLifetimeS: 600,
    },
    logger,
    now,
  });
  await oidc.start();
  const client = createClient(
    OidcService,
    createRouterTransport(({ service }) => service(OidcService, oidc.service)),
  );
  const issue = (over: Record<string, unknown> = {}) =>
    client.issueOidcToken({
      issuer: ISSUER,
      jobId: JOB,
      agentId: AGENT,
      organizationSlug: "acme",
      audience: "sts.example",
      ...over,
    });
  const verify = async (token: string) => {
    const jwks = createLocalJWKSet(JSON.parse((await client.getOidcKeySet({})).jwksJson));
    return (await jwtVerify(token, jwks, { issuer: ISSUER, audience: "sts.example", currentDate: now() })).payload;
  };
  return { keys, job, client, issue, verify, tick: (ms: number) => (clock += ms) };
}

async function codeOf(p: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await p;
    return "ok";
  } catch (err) {
    return ConnectError.from(err).code;
  }
}

describe("OidcService", () => {
  it("signs a running job's token that verifies against the published key set", async () => {
    const w = await world();
    const { token } = await w.issue();
    const claims = await w.verify(token);
    expect(claims).toMatchObject({
      sub: "organization:acme:pipeline:frontend:ref:refs/heads/main:commit:abc:step:deploy",
      job_id: JOB,
    });
    expect(typeof claims.jti).toBe("string");
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: "RS256", typ: "JWT" });
  });

  it("keeps private keys only sealed", async () => {
    const w = await world();
    const stored = JSON.stringify(w.keys.docs);
    expect(stored).not.toMatch(/"d":/);
    expect(w.keys.docs[0]?.privateJwk.ciphertext).toBeTruthy();
  });

  it("refuses a job that is not running, and a job not held by the agent asking", async () => {
    const w = await world();
    w.job.state = "passed";
    expect(await codeOf(w.issue())).toBe(Code.FailedPrecondition);
    w.job.state = "running";
    expect(await codeOf(w.issue({ agentId: "someone-else" }))).toBe(Code.NotFound);
    expect(await codeOf(w.issue({ jobId: "not-a-uuid" }))).toBe(Code.NotFound);
  });

  it("refuses a lifetime past the bound, naming the field", async () => {
    const w = await world();
    const err = await w.issue({ lifetimeSeconds: 601 }).catch((e) => ConnectError.from(e));
    expect(err instanceof ConnectError && fieldErrorsOf(err).map((e) => e.field)).toEqual(["lifetime"]);
  });

  it("rotates without breaking tokens in flight: the new key is published before it signs, the old one kept", async () => {
    const w = await world();
    const before = (await w.issue()).token;
    const { keyId } = await w.client.rotateOidcKey({});
    w.tick(6_000);
    expect(decodeProtectedHeader((await w.issue()).token).kid).not.toBe(keyId);
    expect((JSON.parse((await w.client.getOidcKeySet({})).jwksJson) as { keys: unknown[] }).keys).toHaveLength(2);
    w.tick(15_000);
    const after = (await w.issue()).token;
    expect(decodeProtectedHeader(after).kid).toBe(keyId);
    await expect(w.verify(before)).resolves.toBeDefined();
    await expect(w.verify(after)).resolves.toBeDefined();
    // Once the old key's tokens have all expired (600 s and a minute), it leaves the key set.
    w.tick(661_000);
    expect(
      (JSON.parse((await w.client.getOidcKeySet({})).jwksJson) as { keys: Array<{ kid: string }> }).keys.map(
        (k) => k.kid,
      ),
    ).toEqual([keyId]);
  });

  it("signs nothing without CREDENTIALS_ENCRYPTION_KEY", async () => {
    const w = await world({ keyRing: false });
    expect(await codeOf(w.issue())).toBe(Code.FailedPrecondition);
    expect(await codeOf(w.client.getOidcKeySet({}))).toBe(Code.FailedPrecondition);
  });
});
