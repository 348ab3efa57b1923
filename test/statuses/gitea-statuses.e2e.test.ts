import { spawn } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  createGiteaRepository,
  type GiteaRepository,
  type GiteaServer,
  giteaApi,
  giteaWorkingCopy,
  scanForSecrets,
  type WorkingCopy,
} from "@conveyor/deploy";
import { Role } from "@conveyor/proto/identity";
import { MongoClient } from "mongodb";
import { runCiAdmin } from "../support/ci-admin.js";
import { GITEA_SETUP_TIMEOUT_MS, giteaPrecondition, itWithGitea, startTestGitea } from "../support/gitea.js";
import { eventually, startAgent, stopAllAgents } from "../support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, unique } from "../support/stack-env.js";

// Commit statuses on a real forge end to end (docs/statuses.md; issue 34): an organization connects a real Gitea
// (deploy/src/forge/) with a token; builds of a pipeline whose repository is on that Gitea run on the real
// buildkite-agent, and Gitea's own API (GET /repos/{o}/{r}/commits/{sha}/statuses) shows what the notifications
// service set: pending, then success or failure, with context buildkite/<slug> and the build's web_url; per step too,
// and the contexts of the YAML's notify: github_commit_status.

jest.setTimeout(240_000);

// biome-ignore lint/suspicious/noExplicitAny: REST and Gitea bodies are checked field by field.
type Json = any;

const SCOPES = [
  "read_builds",
  "write_builds",
  "read_pipelines",
  "write_pipelines",
  "read_organizations",
  "read_notification_services",
  "write_notification_services",
];
const PIPELINE = `notify:
  - github_commit_status:
      context: ci/custom
  - github_commit_status:
      context: ci/never
    if: build.branch == "no-such-branch"
steps:
  - label: ":test_tube: Tests"
    key: tests
    command: sleep 2 && bash check.sh
    notify:
      - github_commit_status:
          context: ci/tests
`;

let gitea: GiteaServer | undefined;
let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let repo: GiteaRepository;
let copy: WorkingCopy;
let slug: string;
let builds: string;
let providers: string;

beforeAll(async () => {
  if (giteaPrecondition.missing !== undefined) return;
  gitea = await startTestGitea();
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  const clusterId = await arrangeCluster(org.organization.id);
  const agentToken = (await agents.createAgentToken({ organizationId: org.organization.id, clusterId })).secret;
  repo = await createGiteaRepository(gitea, { name: unique("statuses") });
  copy = await giteaWorkingCopy(gitea, repo);
  providers = `/v2/organizations/${org.organization.slug}/source_providers`;
  const pipelines = `/v2/organizations/${org.organization.slug}/pipelines`;
  const created = await send("POST", pipelines, org.secret, {
    name: unique("Statuses"),
    repository: repo.cloneUrl,
    cluster_id: clusterId,
    configuration: PIPELINE,
    provider_settings: {
      publish_commit_status: true,
      publish_commit_status_per_step: true,
      use_step_key_as_commit_status: true,
    },
  });
  expect(created.status).toBe(201);
  slug = created.body.slug;
  builds = `${pipelines}/${slug}/builds`;
  startAgent({ token: agentToken });
}, GITEA_SETUP_TIMEOUT_MS);

afterAll(async () => {
  await stopAllAgents();
  await gitea?.stop();
});

/** Gitea's statuses of a commit, oldest first. */
async function statusesOf(sha: string): Promise<Json[]> {
  const res = await giteaApi(
    gitea as GiteaServer,
    "GET",
    `/repos/${repo.fullName}/commits/${sha}/statuses?sort=oldest&limit=50`,
  );
  expect(res.status).toBe(200);
  return res.body;
}

const stateOf = (s: Json): string => s.status ?? s.state;

/** Waits until Gitea shows a status of `context` on `sha` in a final state; returns that context's statuses. */
function finalStatuses(sha: string, context: string): Promise<Json[]> {
  return eventually(
    `a final status ${context} on ${sha}`,
    async () => {
      const mine = (await statusesOf(sha)).filter((s: Json) => s.context === context);
      return mine.some((s: Json) => stateOf(s) !== "pending") ? mine : undefined;
    },
    150_000,
  );
}

/** Commits check.sh exiting with `code`, pushes it, and builds that commit over REST. */
async function buildExiting(code: number): Promise<{ sha: string; build: Json }> {
  const sha = await copy.commit({ "check.sh": `echo checking\nexit ${code}\n` }, `Exit ${code}`);
  await copy.push("main");
  const res = await send("POST", builds, org.secret, { commit: sha, branch: "main", message: `Exit ${code}` });
  expect(res.status).toBe(201);
  return { sha, build: res.body };
}

describe("commit statuses on a real Gitea", () => {
  itWithGitea("connects the organization's Gitea over REST; no answer, document or log holds its token", async () => {
    const token = (gitea as GiteaServer).token;
    const refused = await send("POST", providers, org.secret, {
      kind: "gitea",
      api_url: "http://169.254.169.254",
      token: "whatever-token",
    });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual([expect.objectContaining({ field: "api_url" })]);

    const created = await send("POST", providers, org.secret, {
      kind: "gitea",
      api_url: (gitea as GiteaServer).url,
      token,
      description: "The suite's Gitea",
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      kind: "gitea",
      api_url: `${(gitea as GiteaServer).url}/api/v1`,
      repository_host: "127.0.0.1",
      credential_type: "token",
    });
    const listed = await send("GET", providers, org.secret);
    expect(listed.body.map((p: Json) => p.id)).toEqual([created.body.id]);
    for (const answer of [created, listed]) expect(JSON.stringify(answer.body)).not.toContain(token);

    // ci-admin lists the same connection, without a token.
    const cli = await runCiAdmin(["provider", "list", "--org", org.organization.slug]);
    expect(cli.code).toBe(0);
    expect(cli.json).toEqual([expect.objectContaining({ id: created.body.id, kind: "gitea" })]);
    expect(JSON.stringify(cli.json)).not.toContain(token);

    // The stored document holds the token sealed.
    const mongo = await new MongoClient(process.env.MONGODB_URL as string).connect();
    try {
      const doc = await mongo
        .db("conveyor_notifications")
        .collection("source_providers")
        .findOne({ _id: created.body.id } as never);
      expect(doc?.credential).toMatchObject({ keyId: expect.stringMatching(/^k[0-9a-f]{16}$/) });
      expect(JSON.stringify(doc)).not.toContain(token);
    } finally {
      await mongo.close();
    }
  });

  itWithGitea(
    "a build that passes: pending, then success, with context buildkite/<slug> and the build's web_url",
    async () => {
      const { sha, build } = await buildExiting(0);
      const mine = await finalStatuses(sha, `buildkite/${slug}`);
      const states = mine.map(stateOf);
      expect(states[0]).toBe("pending");
      expect(states.at(-1)).toBe("success");
      // Never a pending after the final state.
      expect(states.slice(states.indexOf("success"))).toEqual(["success"]);
      expect(mine.at(-1)).toMatchObject({
        target_url: build.web_url,
        description: expect.stringMatching(new RegExp(`^Build #${build.number} passed \\(\\d+ seconds?\\)$`)),
      });
      for (const s of mine) expect(s.target_url).toBe(build.web_url);

      // The step's own status, named by its key (use_step_key_as_commit_status), linking to its job.
      const step = await finalStatuses(sha, `buildkite/${slug}/tests`);
      expect(stateOf(step.at(-1))).toBe("success");
      expect(step.at(-1).target_url).toMatch(new RegExp(`^${build.web_url}#`));
      expect(step.at(-1).description).toMatch(/^:test_tube: Tests passed/);

      // The YAML's notify: github_commit_status, at build and step level; the one whose if: does not hold is not set.
      const custom = await finalStatuses(sha, "ci/custom");
      expect(stateOf(custom.at(-1))).toBe("success");
      expect(custom.at(-1).target_url).toBe(build.web_url);
      const tests = await finalStatuses(sha, "ci/tests");
      expect(stateOf(tests.at(-1))).toBe("success");
      expect((await statusesOf(sha)).filter((s: Json) => s.context === "ci/never")).toEqual([]);
    },
  );

  itWithGitea("a build that fails: pending, then failure, for the build and its step", async () => {
    const { sha, build } = await buildExiting(3);
    const mine = await finalStatuses(sha, `buildkite/${slug}`);
    expect(mine.map(stateOf)[0]).toBe("pending");
    const last = mine.at(-1);
    expect(stateOf(last)).toBe("failure");
    expect(last.description).toMatch(new RegExp(`^Build #${build.number} (failed|is failing)`));
    const step = await finalStatuses(sha, `buildkite/${slug}/tests`);
    expect(stateOf(step.at(-1))).toBe("failure");
    // The build's final status settles on failure (failing, then failed).
    await eventually("the build's failed status", async () => {
      const all = (await statusesOf(sha)).filter((s: Json) => s.context === `buildkite/${slug}`);
      return all.at(-1)?.description.includes("failed") ? true : undefined;
    });
  });

  itWithGitea(
    "a second notifications replica killed mid-build: the statuses still end pending → success, never back to pending",
    async () => {
      // A replica of the notifications service beside the stack's, sharing its database, NATS consumers and key; its
      // claims last 5 s, so that what it held when killed is sent by the stack's replica soon after.
      const dataDir = process.env.CONVEYOR_TEST_DATA_DIR as string;
      const logFile = join(dataDir, "logs", "notifications-extra.log");
      const child = spawn(process.execPath, [join(process.cwd(), "services/notifications/dist/main.js")], {
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          MONGODB_URL: process.env.MONGODB_URL,
          NATS_URL: process.env.NATS_URL,
          PIPELINES_URL: process.env.PIPELINES_URL,
          BUILDS_URL: process.env.BUILDS_URL,
          IDENTITY_URL: process.env.IDENTITY_URL,
          PUBLIC_URL: process.env.CONVEYOR_API_URL,
          PORT: "0",
          HEALTH_PORT: "0",
          OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
          NOTIFY_LEASE_S: "5",
          CREDENTIALS_ENCRYPTION_KEY: readFileSync(join(dataDir, "credentials-encryption.key"), "utf8").trim(),
        },
        stdio: ["ignore", openSync(logFile, "a"), openSync(logFile, "a")],
      });
      try {
        await eventually("the extra replica to start", async () =>
          readFileSync(logFile, "utf8").includes("service ready") || child.exitCode !== null ? true : undefined,
        );
        expect(child.exitCode).toBeNull();
        const { sha, build } = await buildExiting(0);
        // Killed while the build's events are being handled and sent.
        await eventually("the first status", async () => ((await statusesOf(sha)).length > 0 ? true : undefined));
        child.kill("SIGKILL");
        const mine = await finalStatuses(sha, `buildkite/${slug}`);
        await eventually("the build's success", async () => {
          const all = (await statusesOf(sha)).filter((s: Json) => s.context === `buildkite/${slug}`);
          return stateOf(all.at(-1)) === "success" ? all : undefined;
        });
        const states = (await statusesOf(sha)).filter((s: Json) => s.context === `buildkite/${slug}`).map(stateOf);
        expect(states[0]).toBe("pending");
        expect(states.slice(states.indexOf("success"))).toEqual(["success"]);
        expect(mine.at(-1).target_url).toBe(build.web_url);
      } finally {
        if (child.exitCode === null) child.kill("SIGKILL");
      }
    },
  );

  itWithGitea("leaves the forge's token and the credentials key out of every log", async () => {
    const dataDir = process.env.CONVEYOR_TEST_DATA_DIR as string;
    const key = readFileSync(join(dataDir, "credentials-encryption.key"), "utf8").trim();
    const secrets = [(gitea as GiteaServer).token, key];
    const result = await scanForSecrets(join(dataDir, "logs"), secrets);
    expect(result.files).toBeGreaterThan(0);
    // Findings name a secret by its first characters and length: only these two's are this suite's to judge.
    const ours = new Set(secrets.map((s) => `${s.slice(0, 7)}…(${s.length})`));
    expect(result.findings.filter((f) => ours.has(f.redacted))).toEqual([]);
  });
});
