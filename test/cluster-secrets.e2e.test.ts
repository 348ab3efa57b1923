import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import { eventually, localRepository, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// Cluster secrets read by the real buildkite-agent from jobs (docs/security.md#cluster-secrets): `buildkite-agent
// secret get` in a job of an allowed pipeline and branch gets the value (and the agent's redactor hides it in the
// log); a job of another pipeline, or of another branch, is refused with the policy's reason; a finished job's token
// and another organization's job token read nothing; every read is listed for administrators.

jest.setTimeout(300_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

const SCOPES = [
  "read_builds",
  "write_builds",
  "write_pipelines",
  "read_build_logs",
  "read_secret_details",
  "write_secrets",
];
/** A value of the shape the log scan looks for (deploy/src/logs/secret-scan.ts), so a leak anywhere is found. */
const VALUE = `cvsv_${randomBytes(20).toString("hex")}`;
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const out = mkdtempSync(join(tmpdir(), "conveyor-secrets-"));

interface Org {
  org: Awaited<ReturnType<typeof arrangeOrgUser>>;
  base: string;
  clusterId: string;
}

async function arrangeOrg(): Promise<Org> {
  const org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  const clusterId = await arrangeCluster(org.organization.id);
  const { secret } = await agents.createAgentToken({ organizationId: org.organization.id, clusterId });
  startAgent({ token: secret });
  return { org, base: `/v2/organizations/${org.organization.slug}`, clusterId };
}

let main: Org;
let other: Org;
let repository: string;
let secretId: string;

async function pipeline(o: Org, name: string, command: string): Promise<string> {
  const res = await send("POST", `${o.base}/pipelines`, o.org.secret, {
    name: unique(name),
    repository,
    cluster_id: o.clusterId,
    configuration: JSON.stringify({ steps: [{ label: "secret", command, env: { OUT: out } }] }),
  });
  expect(res.status).toBe(201);
  return res.body.slug;
}

async function build(o: Org, slug: string, branch: string): Promise<Json> {
  const res = await send("POST", `${o.base}/pipelines/${slug}/builds`, o.org.secret, { commit: "HEAD", branch });
  expect(res.status).toBe(201);
  return res.body;
}

const finished = (o: Org, slug: string, number: number): Promise<Json> =>
  eventually(
    `build ${slug}#${number} to finish`,
    async () => {
      const b = (await send("GET", `${o.base}/pipelines/${slug}/builds/${number}`, o.org.secret)).body;
      return b.finished_at ? b : undefined;
    },
    120_000,
  );

async function logText(o: Org, slug: string, number: number, jobId: string): Promise<string> {
  const res = await fetch(`${stack.apiUrl}${o.base}/pipelines/${slug}/builds/${number}/jobs/${jobId}/log.txt`, {
    headers: { authorization: `Bearer ${o.org.secret}` },
  });
  return res.text();
}

/** The agent API's secret read, as `buildkite-agent secret get` makes it. */
const readSecret = (token: string, jobId: string, key: string) =>
  fetch(`${stack.agentUrl}/jobs/${jobId}/secrets?key=${encodeURIComponent(key)}`, {
    headers: { authorization: `Token ${token}` },
  }).then(async (res) => ({ status: res.status, body: (await res.json()) as Json }));

/** The job id and job token a job wrote to `$OUT/<name>`. */
const handOf = (name: string) => {
  const [jobId = "", token = ""] = readFileSync(join(out, name), "utf8").split(" ");
  return { jobId, token };
};
const writeHand = (name: string) =>
  `printf '%s %s' "$BUILDKITE_JOB_ID" "$BUILDKITE_AGENT_ACCESS_TOKEN" > "$OUT/${name}"`;

let webSlug: string;

beforeAll(async () => {
  [main, other] = await Promise.all([arrangeOrg(), arrangeOrg()]);
  repository = localRepository();
  execFileSync("git", ["branch", "feature"], { cwd: repository });
  webSlug = await pipeline(
    main,
    "Web",
    [
      "set -eu",
      // One file per branch: the builds of other branches run the same command.
      writeHand("hand-$BUILDKITE_BRANCH"),
      // Keys are case-insensitive; the value is compared by its digest, so it is never in a command line.
      'buildkite-agent secret get deploy_key | sha256sum | cut -c1-64 | sed "s/^/digest=/"',
      // Printed: the agent registered the value with its redactor, so the log shows [REDACTED].
      "buildkite-agent secret get DEPLOY_KEY",
    ].join("\n"),
  );
  const created = await send("POST", `${main.base}/clusters/${main.clusterId}/secrets`, main.org.secret, {
    key: "DEPLOY_KEY",
    value: VALUE,
    description: "deploys the web",
    policy: `- pipeline_slug: ${webSlug}\n  build_branch: [main, release/*]\n`,
  });
  expect(created.status).toBe(201);
  expect(created.text).not.toContain(VALUE);
  secretId = created.body.id;
}, 300_000);
afterAll(stopAllAgents);

describe("buildkite-agent secret get in a job", () => {
  let allowed: { slug: string; build: Json };

  beforeAll(async () => {
    const b = await build(main, webSlug, "main");
    allowed = { slug: webSlug, build: await finished(main, webSlug, b.number) };
  });

  it("gets the value for a job of the allowed pipeline and branch, redacted in the log", async () => {
    const job = allowed.build.jobs[0];
    const log = await logText(main, allowed.slug, allowed.build.number, job.id);
    expect(allowed.build.state).toBe("passed");
    expect(log).toContain(`digest=${sha256(`${VALUE}\n`)}`);
    expect(log).toContain("[REDACTED]");
    expect(log).not.toContain(VALUE);
  });

  it("is refused for a job of the same pipeline on another branch", async () => {
    const b = await finished(main, webSlug, (await build(main, webSlug, "feature")).number);
    expect(b.state).toBe("failed");
    const log = await logText(main, webSlug, b.number, b.jobs[0].id);
    expect(log).toContain(
      `The access policy of secret DEPLOY_KEY does not allow this job (pipeline_slug "${webSlug}", build_branch "feature")`,
    );
    expect(log).not.toContain(sha256(`${VALUE}\n`));
  });

  it("is refused for a job of another pipeline on the allowed branch", async () => {
    const slug = await pipeline(main, "Other", "buildkite-agent secret get DEPLOY_KEY");
    const b = await finished(main, slug, (await build(main, slug, "main")).number);
    expect(b.state).toBe("failed");
    const log = await logText(main, slug, b.number, b.jobs[0].id);
    expect(log).toContain(`does not allow this job (pipeline_slug "${slug}", build_branch "main")`);
    expect(log).not.toContain(VALUE);
  });

  it("reads nothing with a finished job's token", async () => {
    const hand = handOf("hand-main");
    expect(hand.jobId).toBe(allowed.build.jobs[0].id);
    const res = await readSecret(hand.token, hand.jobId, "DEPLOY_KEY");
    expect(res.status).toBe(401);
    expect(JSON.stringify(res.body)).not.toContain(VALUE);
  });

  it("reads nothing with another organization's running job's token", async () => {
    const slug = await pipeline(
      other,
      "Intruder",
      [writeHand("intruder"), 'for i in $(seq 1 300); do [ -f "$OUT/intruder-done" ] && break; sleep 0.2; done'].join(
        "\n",
      ),
    );
    const b = await build(other, slug, "main");
    await eventually("the intruder job to hand over its token", async () =>
      existsSync(join(out, "intruder")) ? true : undefined,
    );
    const hand = handOf("intruder");
    // Its own job, asking for the key of another organization's cluster: its cluster has none.
    const own = await readSecret(hand.token, hand.jobId, "DEPLOY_KEY");
    expect(own.status).toBe(404);
    // The other organization's job, running or not: not its job.
    const theirs = await readSecret(hand.token, allowed.build.jobs[0].id, "DEPLOY_KEY");
    expect(theirs.status).toBe(404);
    for (const res of [own, theirs]) expect(JSON.stringify(res.body)).not.toContain(VALUE);
    writeFileSync(join(out, "intruder-done"), "");
    expect((await finished(other, slug, b.number)).state).toBe("passed");
  });

  it("lists every read for administrators: who, which job, when, allowed or refused", async () => {
    const res = await send("GET", `${main.base}/clusters/${main.clusterId}/secrets/${secretId}/reads`, main.org.secret);
    expect(res.status).toBe(200);
    const reads: Json[] = res.body;
    const ofAllowed = reads.filter((r) => r.job_id === allowed.build.jobs[0].id);
    expect(ofAllowed).toHaveLength(2);
    expect(ofAllowed.every((r) => r.allowed && r.pipeline_slug === webSlug && r.branch === "main")).toBe(true);
    expect(reads.some((r) => !r.allowed && r.branch === "feature")).toBe(true);
    expect(reads.some((r) => !r.allowed && r.pipeline_slug !== webSlug)).toBe(true);
    for (const r of reads) expect(r.agent_id).not.toBe("");
    const secret = await send("GET", `${main.base}/clusters/${main.clusterId}/secrets/${secretId}`, main.org.secret);
    expect(secret.body.last_read_at).toEqual(expect.any(String));
    expect(res.text + secret.text).not.toContain(VALUE);
  });
});
