import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import { eventually, localRepository, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, unique } from "./support/stack-env.js";

// The real commit (docs/compatibility.md#the-real-commit): a build made for `HEAD` or a branch takes the SHA the real
// buildkite-agent checked out, and the commit's message when it was made without one; `?commit=<sha>` finds it.

jest.setTimeout(180_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let base: string;
let slug: string;
let sha: string;
const MESSAGE = "Teach the parser tabs\n\nThe lexer read a tab as one space.";

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: ["read_builds", "write_builds", "write_pipelines"], role: Role.ADMIN });
  const clusterId = await arrangeCluster(org.organization.id);
  const agentToken = (await agents.createAgentToken({ organizationId: org.organization.id, clusterId })).secret;
  // A second commit with a subject and a body on top of the repository's first.
  const repository = localRepository();
  writeFileSync(join(repository, "parser.txt"), "tabs\n");
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=e2e", "-c", "user.email=e2e@example.com", ...args], {
      cwd: repository,
      encoding: "utf8",
    });
  git("add", ".");
  git("commit", "-q", "-m", MESSAGE);
  sha = git("rev-parse", "HEAD").trim();
  base = `/v2/organizations/${org.organization.slug}`;
  const created = await send("POST", `${base}/pipelines`, org.secret, {
    name: unique("Real commit"),
    repository,
    cluster_id: clusterId,
    configuration: JSON.stringify({
      steps: [
        { label: "one", command: "true" },
        { label: "two", command: "true" },
      ],
    }),
  });
  expect(created.status).toBe(201);
  slug = created.body.slug;
  startAgent({ token: agentToken });
}, 300_000);
afterAll(stopAllAgents);

async function buildTo(body: Record<string, string>): Promise<Json> {
  const res = await send("POST", `${base}/pipelines/${slug}/builds`, org.secret, body);
  expect(res.status).toBe(201);
  return eventually(`build ${slug}#${res.body.number} to finish`, async () => {
    const build = (await send("GET", `${base}/pipelines/${slug}/builds/${res.body.number}`, org.secret)).body;
    return build.finished_at ? build : undefined;
  });
}

describe("the real commit", () => {
  it("gives a build made for HEAD without a message the repository's SHA and message", async () => {
    const build = await buildTo({ commit: "HEAD", branch: "main" });
    expect(build.state).toBe("passed");
    expect(build.commit).toBe(sha);
    expect(build.message).toBe(MESSAGE);
    expect(build.meta_data["buildkite:git:commit"]).toMatch(new RegExp(`^commit ${sha}\\n`));

    const found = await send("GET", `${base}/pipelines/${slug}/builds?commit=${sha}`, org.secret);
    expect(found.status).toBe(200);
    expect(found.body.map((b: Json) => b.number)).toContain(build.number);
    const everywhere = await send("GET", `${base}/builds?commit=${sha}`, org.secret);
    expect(everywhere.body.map((b: Json) => b.id)).toContain(build.id);
  });

  it("keeps the message a build for a branch was made with, and takes the SHA", async () => {
    const build = await buildTo({ commit: "main", branch: "main", message: "Nightly" });
    expect(build).toMatchObject({ state: "passed", commit: sha, message: "Nightly" });
  });
});
