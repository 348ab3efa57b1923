import { Role } from "@conveyor/proto/identity";
import { eventually, localRepository, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// Build matrices as Buildkite documents them (docs/compatibility.md#build-matrix), through REST and the real agent:
// the documentation's examples make their jobs (labels, commands, the `matrix` field, skip, soft_fail, an added
// combination), a matrix build runs to completion with each job's own env, a `pipeline upload` expands its matrix
// too, and what cannot be honoured (Buildkite's limits, unknown tokens, unsupported attributes) is a 422 naming it.

jest.setTimeout(240_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
let repository: string;
let base: string;

beforeAll(async () => {
  org = await arrangeOrgUser({
    scopes: ["read_builds", "write_builds", "write_pipelines", "read_build_logs"],
    role: Role.ADMIN,
  });
  clusterId = await arrangeCluster(org.organization.id);
  repository = localRepository();
  base = `/v2/organizations/${org.organization.slug}`;
}, 120_000);
afterAll(stopAllAgents);

const createPipeline = (configuration: string) =>
  send("POST", `${base}/pipelines`, org.secret, {
    name: unique("Matrix"),
    repository,
    cluster_id: clusterId,
    configuration,
  });

async function pipeline(configuration: string): Promise<string> {
  const res = await createPipeline(configuration);
  expect(res.status).toBe(201);
  return res.body.slug;
}

async function build(slug: string): Promise<Json> {
  const res = await send("POST", `${base}/pipelines/${slug}/builds`, org.secret, { commit: "HEAD", branch: "main" });
  expect(res.status).toBe(201);
  return res.body;
}

const getBuild = async (slug: string, number: number): Promise<Json> =>
  (await send("GET", `${base}/pipelines/${slug}/builds/${number}`, org.secret)).body;

async function logText(slug: string, number: number, jobId: string): Promise<string> {
  const res = await fetch(`${stack.apiUrl}${base}/pipelines/${slug}/builds/${number}/jobs/${jobId}/log.txt`, {
    headers: { authorization: `Bearer ${org.secret}` },
  });
  return res.text();
}

// Buildkite's "Build matrix" examples, verbatim (with the Plan 9 adjustment added to the adjustments example).
const ADJUSTED = `
steps:
- label: "💥 Matrix build with adjustments"
  command: "echo {{matrix.os}} {{matrix.arch}} {{matrix.test}}"
  key: matrix-step
  matrix:
    setup:
      arch:
        - "amd64"
        - "arm64"
      os:
        - "windows"
        - "linux"
      test:
        - "A"
        - "B"
    adjustments:
      - with:
          os: "windows"
          arch: "arm64"
          test: "B"
        soft_fail: true
      - with:
          os: "linux"
          arch: "arm64"
          test: "B"
        skip: true
      - with:
          os: "Plan 9"
          arch: "arm64"
          test: "B"
`;

describe("matrix steps through REST", () => {
  it("makes the documented jobs: 2 × 2 × 2 − 1 skipped + 1 added, each with its combination", async () => {
    const slug = await pipeline(ADJUSTED);
    const b = await build(slug);
    const jobs = b.jobs as Json[];
    expect(jobs).toHaveLength(8);
    expect(jobs.map((j) => j.command)).toEqual([
      "echo windows amd64 A",
      "echo windows amd64 B",
      "echo linux amd64 A",
      "echo linux amd64 B",
      "echo windows arm64 A",
      "echo windows arm64 B",
      "echo linux arm64 A",
      "echo Plan 9 arm64 B",
    ]);
    expect(jobs[7].matrix).toEqual({ arch: "arm64", os: "Plan 9", test: "B" });
    expect(jobs[0].matrix).toEqual({ arch: "amd64", os: "windows", test: "A" });
    for (const job of jobs) {
      expect(job).toMatchObject({
        type: "script",
        label: "💥 Matrix build with adjustments",
        step_key: "matrix-step",
        parallel_group_index: null,
        parallel_group_total: null,
      });
      expect(job.step.id).toBe(jobs[0].step.id);
    }
    // The soft_fail adjustment is the job's: its failure would not fail the build (checked by the unit tests of
    // the plan); here the jobs are listed as Buildkite lists them, the build's own list the same when read again.
    const again = await getBuild(slug, b.number);
    expect((again.jobs as Json[]).map((j) => j.matrix)).toEqual(jobs.map((j) => j.matrix));
  });

  it("refuses with a 422 naming the field what it cannot honour, and creates nothing", async () => {
    const cases: Array<[string, string]> = [
      [
        "steps:\n  - command: x\n    matrix:\n      setup: {a: [1], b: [1], c: [1], d: [1], e: [1], f: [1], g: [1]}",
        "steps[0].matrix.setup",
      ],
      [
        `steps:\n  - command: x\n    matrix: [${Array.from({ length: 21 }, (_, i) => i).join(", ")}]`,
        "steps[0].matrix",
      ],
      [
        `steps:\n  - command: x\n    matrix:\n      setup: {a: [${Array.from({ length: 8 }, (_, i) => i).join(", ")}], b: [1, 2, 3, 4, 5, 6, 7]}`,
        "steps[0].matrix",
      ],
      ["steps:\n  - command: echo {{matrix.os}}\n    matrix: [a, b]", "steps[0].command"],
      [
        "steps:\n  - command: x\n    concurrency: 1\n    concurrency_group: g-{{matrix}}\n    matrix: [a]",
        "steps[0].concurrency_group",
      ],
      ["steps:\n  - command: x\n    cache: node_modules", "steps[0].cache"],
      ["steps:\n  - command: x\n    if_changed: src/**", "steps[0].if_changed"],
      ["steps:\n  - command: x\n    labels: typo", "steps[0].labels"],
    ];
    const count = async () => (await send("GET", `${base}/pipelines?per_page=100`, org.secret)).body.length;
    const before = await count();
    for (const [configuration, field] of cases) {
      const res = await createPipeline(configuration);
      expect([configuration, res.status]).toEqual([configuration, 422]);
      const fields = JSON.stringify(res.body);
      expect(fields).toContain(field);
    }
    expect(await count()).toBe(before);
  });
});

describe("a matrix build run by the real agent", () => {
  it("runs every combination with its own env, and a pipeline upload expands its matrix", async () => {
    const agentToken = (await agents.createAgentToken({ organizationId: org.organization.id, clusterId })).secret;
    startAgent({ token: agentToken });
    // The uploaded YAML: `$$` keeps the agent's upload-time interpolation off the variable, which the job's shell
    // then reads from the env the matrix gave it.
    const upload = [
      "steps:",
      '  - label: "uploaded {{matrix}}"',
      '    command: "echo uploaded-$$UPLOADED"',
      "    env:",
      '      UPLOADED: "{{matrix}}"',
      "    matrix: [one, two]",
    ].join("\\n");
    const refused = ["steps:", '  - command: "echo {{matrix.nope}}"', "    matrix: [a, b]"].join("\\n");
    const slug = await pipeline(
      JSON.stringify({
        steps: [
          {
            label: "{{matrix}} build",
            command: "echo GOOS=$os",
            env: { os: "{{matrix}}" },
            matrix: ["darwin", "Linux", "Windows"],
          },
          { label: "upload", command: `printf '${upload}\\n' | buildkite-agent pipeline upload` },
          {
            label: "refused upload",
            // The agent stops at a 422 (it does not retry one) and prints the reason.
            command: `if printf '${refused}\\n' | buildkite-agent pipeline upload; then exit 1; fi`,
          },
        ],
      }),
    );
    const b = await build(slug);
    expect((b.jobs as Json[]).map((j) => j.label)).toEqual([
      "darwin build",
      "Linux build",
      "Windows build",
      "upload",
      "refused upload",
    ]);
    const done = await eventually(
      `build ${slug}#${b.number} to finish`,
      async () => {
        const now = await getBuild(slug, b.number);
        return now.finished_at ? now : undefined;
      },
      150_000,
    );
    expect(done.state).toBe("passed");
    const jobs = done.jobs as Json[];
    expect(jobs.map((j) => [j.label, j.state, j.matrix])).toEqual([
      ["darwin build", "passed", { "": "darwin" }],
      ["Linux build", "passed", { "": "Linux" }],
      ["Windows build", "passed", { "": "Windows" }],
      ["upload", "passed", null],
      ["uploaded one", "passed", { "": "one" }],
      ["uploaded two", "passed", { "": "two" }],
      ["refused upload", "passed", null],
    ]);
    expect(await logText(slug, b.number, jobs[6].id)).toContain("steps[0].command");
    for (const [i, os] of ["darwin", "Linux", "Windows"].entries()) {
      expect(await logText(slug, b.number, jobs[i].id)).toContain(`GOOS=${os}`);
    }
    expect(await logText(slug, b.number, jobs[4].id)).toContain("uploaded-one");
    expect(await logText(slug, b.number, jobs[5].id)).toContain("uploaded-two");
  });
});
