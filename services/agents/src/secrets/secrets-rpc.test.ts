import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { type Build, BuildSchema, type Job, JobSchema } from "@conveyor/proto/builds";
import { SecretsService } from "@conveyor/proto/secrets";
import { fieldErrorsOf, keyRingFrom, notFound } from "@conveyor/runtime";
import { logger } from "../test-support.js";
import { createMemorySecretRepository } from "./memory-secret-repository.js";
import { createSecrets } from "./secrets-service.js";

const ORG = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
const OTHER_ORG = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";
const CLUSTER = "cccccccc-cccc-4ccc-8ccc-cccccccccccc";
const OTHER_CLUSTER = "dddddddd-dddd-4ddd-8ddd-dddddddddddd";
const JOB = "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee";
const AGENT = "ffffffff-ffff-4fff-8fff-ffffffffffff";
const VALUE = "s3cr3t-value-never-logged";
const ACTOR = { id: "u1", name: "Ann", email: "ann@example.com" };
const json = (x: unknown) => JSON.stringify(x, (_k, v) => (typeof v === "bigint" ? String(v) : v));

async function world(opts: { keyRing?: boolean } = {}) {
  let clock = Date.parse("2026-03-01T00:00:00Z");
  const now = () => new Date(clock);
  const secrets = createMemorySecretRepository();
  const clusters = [
    { _id: CLUSTER, organizationId: ORG },
    { _id: OTHER_CLUSTER, organizationId: ORG },
  ];
  const job: Job = create(JobSchema, {
    id: JOB,
    buildId: "build-1",
    organizationId: ORG,
    clusterId: CLUSTER,
    clusterQueueId: "queue-1",
    queue: "default",
    pipelineId: "pipeline-1",
    buildNumber: 7,
    state: "running",
    agent: { id: AGENT },
  });
  const build: Build = create(BuildSchema, {
    id: "build-1",
    pipelineSlug: "frontend",
    branch: "main",
    source: "api",
    creator: { email: "ann@example.com" },
  });
  const lines: string[] = [];
  const spy = logger.child({});
  for (const level of ["info", "warn", "error"] as const) {
    const original = spy[level].bind(spy);
    spy[level] = ((...args: unknown[]) => {
      lines.push(JSON.stringify(args));
      return (original as (...a: unknown[]) => void)(...args);
    }) as typeof spy.info;
  }
  const domain = createSecrets({
    secrets,
    clusters: {
      findCluster: async (o, id) => {
        const c = clusters.find((x) => x._id === id && x.organizationId === o);
        return c ? { ...c, name: "c", description: "", createdAt: now() } : null;
      },
    },
    builds: {
      getJob: async (req) => {
        if (req.jobId !== job.id) throw notFound("job");
        return { $typeName: "ci.builds.v1.GetJobResponse", job } as never;
      },
      getBuild: async () => ({ build }) as never,
    },
    config: {
      keyRing: opts.keyRing === false ? null : keyRingFrom(randomBytes(32).toString("base64"), ""),
      readsRetentionDays: 90,
    },
    logger: spy,
    now,
  });
  const client = createClient(
    SecretsService,
    createRouterTransport((router) => router.service(SecretsService, domain.service)),
  );
  const make = (fields: { key?: string; value?: string; policy?: string; description?: string } = {}) =>
    client.createClusterSecret({
      organizationId: ORG,
      clusterId: CLUSTER,
      key: "DEPLOY_KEY",
      value: VALUE,
      description: "",
      policy: "",
      actor: ACTOR,
      ...fields,
    });
  const read = (key = "deploy_key", o: { org?: string; agent?: string; job?: string } = {}) =>
    client.readJobSecret({ organizationId: o.org ?? ORG, jobId: o.job ?? JOB, agentId: o.agent ?? AGENT, key });
  return { client, secrets, job, build, lines, make, read, domain, tick: (ms: number) => (clock += ms) };
}

async function failure(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected a failure");
}

describe("managing cluster secrets", () => {
  it("creates, lists, gets, updates and deletes, never answering the value", async () => {
    const w = await world();
    const { secret } = await w.make({ description: "deploys", policy: "- pipeline_slug: frontend" });
    expect(secret).toMatchObject({ key: "DEPLOY_KEY", description: "deploys", createdBy: ACTOR });
    expect(json(secret)).not.toContain(VALUE);
    expect(json(w.secrets.secrets)).not.toContain(VALUE);
    const id = secret?.id ?? "";
    const listed = await w.client.listClusterSecrets({ organizationId: ORG, clusterId: CLUSTER });
    expect(listed.secrets.map((s) => s.key)).toEqual(["DEPLOY_KEY"]);
    const updated = await w.client.updateClusterSecret({
      organizationId: ORG,
      clusterId: CLUSTER,
      id,
      description: "new",
      actor: ACTOR,
    });
    expect(updated.secret).toMatchObject({ description: "new", policy: "- pipeline_slug: frontend", updatedBy: ACTOR });
    await w.client.updateClusterSecretValue({ organizationId: ORG, clusterId: CLUSTER, id, value: "rotated" });
    expect((await w.read()).value).toBe("rotated");
    await w.client.deleteClusterSecret({ organizationId: ORG, clusterId: CLUSTER, id });
    expect((await failure(w.client.getClusterSecret({ organizationId: ORG, clusterId: CLUSTER, id }))).code).toBe(
      Code.NotFound,
    );
    expect(w.lines.join("\n")).not.toContain(VALUE);
  });

  it("refuses bad keys, values, descriptions and policies naming the field, and changes nothing", async () => {
    const w = await world();
    for (const [fields, field] of [
      [{ key: "BK_TOKEN" }, "key"],
      [{ key: "1X" }, "key"],
      [{ value: "" }, "value"],
      [{ value: "x".repeat(8193) }, "value"],
      [{ description: "d".repeat(1001) }, "description"],
      [{ policy: "- build_creator_team: x" }, "policy"],
      [{ policy: "- pipeline: x" }, "policy"],
    ] as const) {
      const err = await failure(w.make(fields));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(fieldErrorsOf(err).map((e) => e.field)).toEqual([field]);
    }
    expect(w.secrets.secrets).toHaveLength(0);
  });

  it("keeps keys unique in a cluster regardless of case, and bounds a cluster's secrets", async () => {
    const w = await world();
    await w.make();
    expect((await failure(w.make({ key: "deploy_KEY" }))).code).toBe(Code.AlreadyExists);
    await w.client.createClusterSecret({
      organizationId: ORG,
      clusterId: OTHER_CLUSTER,
      key: "DEPLOY_KEY",
      value: "v",
      description: "",
      policy: "",
    });
    for (let i = 1; i < 100; i++) await w.make({ key: `K${i}` });
    expect((await failure(w.make({ key: "ONE_TOO_MANY" }))).rawMessage).toBe("A cluster holds at most 100 secrets");
  });

  it("finds no cluster of another organization", async () => {
    const w = await world();
    const err = await failure(
      w.client.createClusterSecret({
        organizationId: OTHER_ORG,
        clusterId: CLUSTER,
        key: "K",
        value: "v",
        description: "",
        policy: "",
      }),
    );
    expect(err.code).toBe(Code.NotFound);
  });

  it("makes and reads nothing without an encryption key, saying so", async () => {
    const w = await world({ keyRing: false });
    expect((await failure(w.make())).rawMessage).toContain("CREDENTIALS_ENCRYPTION_KEY");
  });
});

describe("a job reading a secret", () => {
  it("gets the value by key in any case, recorded with the job, agent and time", async () => {
    const w = await world();
    const { secret } = await w.make();
    w.tick(1000);
    expect(await w.read("Deploy_Key")).toMatchObject({ key: "DEPLOY_KEY", value: VALUE, id: secret?.id });
    const { reads } = await w.client.listClusterSecretReads({
      organizationId: ORG,
      clusterId: CLUSTER,
      id: secret?.id ?? "",
    });
    expect(reads).toHaveLength(1);
    expect(reads[0]).toMatchObject({
      jobId: JOB,
      agentId: AGENT,
      allowed: true,
      pipelineSlug: "frontend",
      branch: "main",
    });
    const got = await w.client.getClusterSecret({ organizationId: ORG, clusterId: CLUSTER, id: secret?.id ?? "" });
    expect(got.secret?.lastReadAt).toBeDefined();
    expect(w.lines.join("\n")).not.toContain(VALUE);
  });

  it("is refused by the policy's pipeline or branch, and the refusal recorded", async () => {
    const w = await world();
    const { secret } = await w.make({ policy: "- pipeline_slug: backend\n- build_branch: release/*" });
    const err = await failure(w.read());
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.rawMessage).toContain('does not allow this job (pipeline_slug "frontend", build_branch "main")');
    w.build.branch = "release/1.0";
    expect((await w.read()).value).toBe(VALUE);
    const { reads } = await w.client.listClusterSecretReads({
      organizationId: ORG,
      clusterId: CLUSTER,
      id: secret?.id ?? "",
    });
    expect(reads.map((r) => r.allowed).sort()).toEqual([false, true]);
  });

  it("is refused once the job is not running", async () => {
    const w = await world();
    await w.make();
    for (const state of ["passed", "canceled", "scheduled", "assigned"]) {
      w.job.state = state;
      expect((await failure(w.read())).rawMessage).toContain(`this job is ${state}`);
    }
    expect(w.secrets.reads.every((r) => !r.allowed)).toBe(true);
  });

  it("finds no job of another organization or agent, and no secret of another cluster", async () => {
    const w = await world();
    await w.make();
    expect((await failure(w.read("DEPLOY_KEY", { org: OTHER_ORG }))).code).toBe(Code.NotFound);
    expect((await failure(w.read("DEPLOY_KEY", { agent: "someone-else" }))).code).toBe(Code.NotFound);
    expect((await failure(w.read("DEPLOY_KEY", { job: "not-a-uuid" }))).code).toBe(Code.NotFound);
    w.job.clusterId = OTHER_CLUSTER;
    expect((await failure(w.read())).code).toBe(Code.NotFound);
    w.job.clusterId = "";
    expect((await failure(w.read())).code).toBe(Code.NotFound);
  });

  it("refuses a value altered at rest", async () => {
    const w = await world();
    await w.make();
    const stored = w.secrets.secrets[0];
    if (!stored) throw new Error("no secret");
    const bytes = Buffer.from(stored.value.ciphertext, "base64");
    bytes[14] = (bytes[14] ?? 0) ^ 1;
    stored.value.ciphertext = bytes.toString("base64");
    expect((await failure(w.read())).rawMessage).toContain("cannot be opened");
  });

  it("prunes reads older than the retention", async () => {
    const w = await world();
    await w.make();
    await w.read();
    w.tick(91 * 86_400_000);
    await w.read();
    await w.domain.prune();
    expect(w.secrets.reads).toHaveLength(1);
  });
});
