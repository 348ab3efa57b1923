import { Role } from "@conveyor/proto/identity";
import { runCiAdmin } from "./support/ci-admin.js";
import { eventually, localRepository, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, unique } from "./support/stack-env.js";

// `buildkite-agent artifact download --build <another pipeline's build>` on the real agent: refused until a
// pipeline.artifacts_read.pipeline rule lets the downloading pipeline read the other's artifacts; and the retention
// setting through ci-admin.

jest.setTimeout(180_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let base: string;
let clusterId: string;
let repository: string;

beforeAll(async () => {
  org = await arrangeOrgUser({
    scopes: ["read_builds", "write_builds", "read_pipelines", "write_pipelines", "read_artifacts", "write_rules"],
    role: Role.ADMIN,
  });
  base = `/v2/organizations/${org.organization.slug}`;
  clusterId = await arrangeCluster(org.organization.id);
  const { secret } = await agents.createAgentToken({ organizationId: org.organization.id, clusterId });
  startAgent({ token: secret });
  repository = localRepository();
});
afterAll(stopAllAgents);

async function pipeline(name: string, configuration: string): Promise<Json> {
  const res = await send("POST", `${base}/pipelines`, org.secret, {
    name: unique(name),
    repository,
    cluster_id: clusterId,
    configuration,
  });
  expect(res.status).toBe(201);
  return res.body;
}

async function build(slug: string, env: Record<string, string> = {}): Promise<Json> {
  const created = await send("POST", `${base}/pipelines/${slug}/builds`, org.secret, {
    commit: "HEAD",
    branch: "main",
    env,
  });
  expect(created.status).toBe(201);
  return eventually(
    `build of ${slug} to finish`,
    async () => {
      const b = await send("GET", `${base}/pipelines/${slug}/builds/${created.body.number}`, org.secret);
      return b.body.finished_at ? b.body : undefined;
    },
    90_000,
  );
}

describe("artifacts of another pipeline's build", () => {
  it("are downloaded with --build only once an artifacts_read rule allows it", async () => {
    const source = await pipeline(
      "Artifact Source",
      'steps:\n  - key: make\n    command: echo "made by the source" > out.txt && buildkite-agent artifact upload out.txt\n',
    );
    const made = await build(source.slug);
    expect(made.state).toBe("passed");
    const reader = await pipeline(
      "Artifact Reader",
      'steps:\n  - command: buildkite-agent artifact download out.txt . --build "$SOURCE_BUILD" --step make && grep -q "made by the source" out.txt\n',
    );
    // Refused (403): the agent retries a failed search ten times, 5 s apart, before the step fails (~45 s). The
    // rule's direction is covered by identity's CheckRule tests.
    expect((await build(reader.slug, { SOURCE_BUILD: made.id })).state).toBe("failed");
    const rule = await send("POST", `${base}/rules`, org.secret, {
      type: "pipeline.artifacts_read.pipeline",
      value: { source_pipeline: reader.id, target_pipeline: source.id },
    });
    expect(rule.status).toBe(201);
    expect((await build(reader.slug, { SOURCE_BUILD: made.id })).state).toBe("passed");
  });
});

describe("artifact retention through ci-admin", () => {
  it("reads the default, sets an organization's days, and returns to the default", async () => {
    const ciAdmin = (...args: string[]) => runCiAdmin(args);
    const slug = org.organization.slug;
    expect((await ciAdmin("artifacts", "retention", "get", "--org", slug)).json).toEqual({ days: 180, default: true });
    expect((await ciAdmin("artifacts", "retention", "set", "--org", slug, "--days", "30")).json).toEqual({
      days: 30,
      default: false,
    });
    expect((await ciAdmin("artifacts", "retention", "get", "--org", slug)).json).toEqual({ days: 30, default: false });
    expect((await ciAdmin("artifacts", "retention", "set", "--org", slug, "--days", "9999")).code).not.toBe(0);
    expect((await ciAdmin("artifacts", "retention", "set", "--org", slug, "--days", "0")).json).toEqual({
      days: 180,
      default: true,
    });
  });
});
