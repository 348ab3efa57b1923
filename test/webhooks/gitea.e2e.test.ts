import {
  addGiteaWebhook,
  createGiteaRepository,
  type GiteaHookDelivery,
  type GiteaRepository,
  type GiteaServer,
  giteaHookDeliveries,
  giteaWorkingCopy,
  type WorkingCopy,
} from "@conveyor/deploy";
import { Role } from "@conveyor/proto/identity";
import {
  GITEA_SETUP_TIMEOUT_MS,
  giteaPrecondition,
  itWithGitea,
  startTestGitea,
  stopTestGiteas,
} from "../support/gitea.js";
import { eventually, startAgent, stopAllAgents } from "../support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "../support/stack-env.js";

// A real forge end to end (docs/webhooks.md, "Setting up a forge"; issue 33): commits pushed over HTTP to a real
// Gitea (deploy/src/forge/), whose webhook of type Gitea, signed with the pipeline's webhook secret, reaches the
// pipeline's provider.webhook_url on the test stack; the build runs on the real buildkite-agent, which clones the
// repository from Gitea. Gitea's own record of its deliveries says how each was answered.

jest.setTimeout(180_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field.
type Json = any;

const SECRET = "a webhook secret shared by Gitea and the pipeline";
const SCOPES = ["read_builds", "write_builds", "read_pipelines", "write_pipelines", "read_job_env", "read_build_logs"];
/** What every build runs: a script from the checkout that prints the commit, the branch, the tag and a file. */
const SHOW = `#!/bin/bash
set -euo pipefail
echo "checked out $(git rev-parse HEAD) on \${BUILDKITE_BRANCH}"
echo "tag: \${BUILDKITE_TAG:-none}"
cat greeting.txt
`;
const AUTHOR = { name: "Ada Lovelace", email: "ada@example.com" };

let gitea: GiteaServer | undefined;
let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let repo: GiteaRepository;
let copy: WorkingCopy;
let hookId: number;
let builds: string;

beforeAll(async () => {
  if (giteaPrecondition.missing !== undefined) return;
  const started = await startTestGitea();
  gitea = started;
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN });
  const clusterId = await arrangeCluster(org.organization.id);
  const agentToken = (await agents.createAgentToken({ organizationId: org.organization.id, clusterId })).secret;
  repo = await createGiteaRepository(gitea, { name: unique("app") });
  copy = await giteaWorkingCopy(gitea, repo, started.workDir);

  // The pipeline builds from the repository's clone URL; main and v* tags only; tags build.
  const pipelines = `/v2/organizations/${org.organization.slug}/pipelines`;
  const created = await send("POST", pipelines, org.secret, {
    name: unique("Gitea"),
    repository: repo.cloneUrl,
    cluster_id: clusterId,
    configuration: "steps:\n  - label: show\n    command: bash .buildkite/show.sh\n",
    branch_configuration: "main v*",
    provider_settings: { build_tags: true },
  });
  expect(created.status).toBe(201);
  builds = `${pipelines}/${created.body.slug}/builds`;
  const secret = await send("PATCH", `${pipelines}/${created.body.slug}`, org.secret, {
    provider_settings: { webhook_secret: SECRET },
  });
  expect(secret.status).toBe(200);
  hookId = (await addGiteaWebhook(gitea, repo, { url: created.body.provider.webhook_url, secret: SECRET })).id;
  startAgent({ token: agentToken });
}, GITEA_SETUP_TIMEOUT_MS);

afterAll(async () => {
  await stopAllAgents();
  await stopTestGiteas();
});

/** The pipeline's builds, newest first. */
async function listBuilds(): Promise<Json[]> {
  const res = await send("GET", `${builds}?per_page=100`, org.secret);
  expect(res.status).toBe(200);
  return res.body;
}

/** Waits for the build of a commit to finish; returns it. */
function finishedBuildOf(sha: string): Promise<Json> {
  return eventually(
    `the build of ${sha} to finish`,
    async () => {
      const build = (await listBuilds()).find((b: Json) => b.commit === sha);
      return build?.finished_at ? build : undefined;
    },
    120_000,
  );
}

async function jobLog(build: Json): Promise<string> {
  const res = await fetch(`${stack.apiUrl}${builds}/${build.number}/jobs/${build.jobs[0].id}/log.txt`, {
    headers: { authorization: `Bearer ${org.secret}` },
  });
  expect(res.status).toBe(200);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the agent's timestamp escapes (ESC _bk;t=… BEL)
  return (await res.text()).replace(/\u001b_bk;t=\d+\u0007/g, "");
}

/** Waits until Gitea's record shows the delivery of `event` whose request payload mentions `needle`, answered. */
function deliveryOf(event: string, needle: string): Promise<GiteaHookDelivery> {
  return eventually(
    `Gitea's delivery of the ${event} event of ${needle}`,
    async () => {
      const all = await giteaHookDeliveries(gitea as GiteaServer, repo, hookId);
      return all.find((d) => d.event === event && d.status !== undefined && d.requestBody.includes(needle));
    },
    60_000,
  );
}

describe("a real Gitea pushing to a pipeline", () => {
  let first: string;

  itWithGitea(
    "builds a push to main on the real agent: source webhook, the pushed SHA, branch, message and author",
    async () => {
      first = await copy.commit(
        { "greeting.txt": "Hello from Gitea\n", ".buildkite/show.sh": SHOW },
        "Say hello\n\nThe first commit, pushed to Gitea.",
        AUTHOR,
      );
      await copy.push("main");
      const build = await finishedBuildOf(first);
      expect(build).toMatchObject({
        source: "webhook",
        commit: first,
        branch: "main",
        state: "passed",
        creator: null,
        author: AUTHOR,
      });
      expect(build.message.trim()).toBe("Say hello\n\nThe first commit, pushed to Gitea.");
      expect(build.jobs).toHaveLength(1);
      expect(build.jobs[0]).toMatchObject({ state: "passed", exit_status: 0 });
      const log = await jobLog(build);
      expect(log).toContain(`checked out ${first} on main`);
      expect(log).toContain("tag: none");
      expect(log).toContain("Hello from Gitea");

      const delivery = await deliveryOf("push", first);
      expect(delivery.status).toBe(200);
      expect(JSON.parse(delivery.responseBody)).toMatchObject({
        message: "Received: 1 build created.",
        builds: [{ number: build.number, commit: first, branch: "main" }],
      });
    },
  );

  itWithGitea(
    "builds nothing for a push to a branch the pipeline's branch filter leaves out, and says why",
    async () => {
      const sha = await copy.commit({ "greeting.txt": "Hello from a feature\n" }, "Try a feature", AUTHOR);
      await copy.push("feature");
      const delivery = await deliveryOf("push", sha);
      expect(delivery.status).toBe(200);
      expect(JSON.parse(delivery.responseBody)).toMatchObject({
        builds: [],
        reasons: ['Branch "feature" does not match the pipeline\'s branch filter "main v*".'],
      });
      expect((await listBuilds()).filter((b: Json) => b.commit === sha)).toEqual([]);
    },
  );

  itWithGitea(
    "builds a pushed tag with build_tags: its name as branch and BUILDKITE_TAG, on the real agent",
    async () => {
      await copy.git("checkout", "-q", first);
      await copy.tag("v1.0", "Version 1.0");
      await copy.pushTag("v1.0");
      const delivery = await deliveryOf("push", "refs/tags/v1.0");
      expect(delivery.status).toBe(200);
      const build = await eventually(
        "the tag's build to finish",
        async () => {
          const found = (await listBuilds()).find((b: Json) => b.branch === "v1.0");
          return found?.finished_at ? found : undefined;
        },
        120_000,
      );
      expect(build).toMatchObject({ source: "webhook", commit: first, branch: "v1.0", state: "passed" });
      const env = await send("GET", `${builds}/${build.number}/jobs/${build.jobs[0].id}/env`, org.secret);
      expect(env.body.env).toMatchObject({ BUILDKITE_TAG: "v1.0", BUILDKITE_BRANCH: "v1.0", BUILDKITE_COMMIT: first });
      const log = await jobLog(build);
      expect(log).toContain(`checked out ${first} on v1.0`);
      expect(log).toContain("tag: v1.0");
    },
  );

  itWithGitea("builds nothing for a push whose message says [skip ci], and says why", async () => {
    await copy.git("checkout", "-q", "-B", "main", first);
    const sha = await copy.commit({ "README.md": "# app\n" }, "Document the app [skip ci]", AUTHOR);
    await copy.push("main");
    const delivery = await deliveryOf("push", sha);
    expect(delivery.status).toBe(200);
    expect(JSON.parse(delivery.responseBody)).toMatchObject({
      builds: [],
      reasons: ["The commit message says [skip ci]: not built."],
    });
    expect((await listBuilds()).filter((b: Json) => b.commit === sha)).toEqual([]);
  });

  itWithGitea(
    "reads Gitea's delete event of a branch, and builds or cancels nothing with the setting off",
    async () => {
      await copy.deleteBranch("feature");
      const delivery = await deliveryOf("delete", '"ref": "feature"');
      expect(delivery.status).toBe(200);
      expect(JSON.parse(delivery.responseBody)).toMatchObject({
        builds: [],
        canceled_builds: 0,
        reasons: ['Branch "feature" was deleted; its builds go on (cancel_deleted_branch_builds is off).'],
      });
    },
  );

  itWithGitea("has every delivery Gitea made answered 2xx, in its own record", async () => {
    const deliveries = await giteaHookDeliveries(gitea as GiteaServer, repo, hookId);
    // Four pushes, the create events of the two branches and the tag pushed for the first time, and a deletion.
    expect(deliveries.filter((d) => d.event === "push")).toHaveLength(4);
    expect(deliveries.filter((d) => d.event === "create")).toHaveLength(3);
    expect(deliveries.filter((d) => d.event === "delete")).toHaveLength(1);
    for (const d of deliveries) {
      expect({ event: d.event, status: d.status, succeeded: d.succeeded }).toEqual({
        event: d.event,
        status: expect.any(Number),
        succeeded: true,
      });
      expect(d.status).toBeGreaterThanOrEqual(200);
      expect(d.status).toBeLessThan(300);
    }
    // Every build of the pipeline came from a delivery: the push to main and the tag.
    expect((await listBuilds()).map((b: Json) => b.branch).sort()).toEqual(["main", "v1.0"]);
  });
});
