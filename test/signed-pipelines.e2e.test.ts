import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Role } from "@conveyor/proto/identity";
import { exportJWK, generateKeyPair } from "jose";
import { parse } from "yaml";
import { eventually, localRepository, startAgent, stopAllAgents } from "./support/real-agent.js";
import { agents, arrangeCluster, arrangeOrgUser, send, stack, unique } from "./support/stack-env.js";

// Signed pipelines (docs/security.md#signed-pipelines) with the real agent: `pipeline upload --jwks-file` signs the
// steps, the server keeps them verbatim and gives each job its `step` and `matrix_permutation`, and an agent started
// with `--verification-jwks-file` runs the signed jobs and refuses (exit -1, signal_reason signature_rejected) a step
// whose command was changed after signing (its signature copied onto another command) and a step with none. Steps
// with plugins (vendored in the repository, so no network) and step env run too: the agent compares the signed
// plugins with the job's BUILDKITE_PLUGINS and the signed env with the job's env; a plugin's settings changed after
// signing are refused like a changed command.

jest.setTimeout(300_000);

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field below.
type Json = any;

const KEY_ID = "e2e-signing-key";

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let clusterId: string;
let repository: string;
let privateJwks: string;

beforeAll(async () => {
  org = await arrangeOrgUser({
    scopes: ["read_builds", "write_builds", "write_pipelines", "read_build_logs"],
    role: Role.ADMIN,
  });
  clusterId = await arrangeCluster(org.organization.id);

  // The signing key pair, as `buildkite-agent tool keygen` would make it: the private JWKS signs, the public verifies.
  const keys = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const dir = mkdtempSync(join(tmpdir(), "conveyor-signing-"));
  privateJwks = join(dir, "private.json");
  const publicJwks = join(dir, "public.json");
  const jwk = (k: Json) => ({ ...k, kid: KEY_ID, alg: "EdDSA" });
  writeFileSync(privateJwks, JSON.stringify({ keys: [jwk(await exportJWK(keys.privateKey))] }));
  writeFileSync(publicJwks, JSON.stringify({ keys: [jwk(await exportJWK(keys.publicKey))] }));

  // The tampered step: a step signed for one command, its command then changed (the signature copied onto it), as
  // someone who can upload steps but does not hold the key would forge one. Signed offline with the real agent, for
  // this repository (the signature covers the repository's URL).
  repository = localRepository({ "README.md": "# signed\n" });
  const original = join(dir, "original.yml");
  writeFileSync(
    original,
    [
      "steps:",
      "  - key: tampered",
      "    command: echo original",
      "    agents: {queue: verify}",
      "  - key: tampered-plugin",
      "    command: echo plugin-step-ran",
      "    plugins:",
      "      - ./.buildkite/plugins/hello: {greeting: original}",
      "    agents: {queue: verify}",
      "",
    ].join("\n"),
  );
  const signed = parse(
    execFileSync(
      stack.agentBin,
      ["tool", "sign", "--jwks-file", privateJwks, "--jwks-key-id", KEY_ID, "--repo", repository, original],
      { encoding: "utf8" },
    ),
  ) as Json;
  expect(signed.steps[0].signature.signed_fields).toContain("command");
  expect(signed.steps[1].signature.signed_fields).toContain("plugins");
  commit(repository, {
    "signed.yml": [
      "steps:",
      "  - key: signed",
      "    command: echo signed-ran $$GREETING",
      "    env: {GREETING: hello}",
      "    agents: {queue: verify}",
      "  - key: signed-plugins",
      "    command: echo plugin-step-ran",
      "    env: {STEP_VAR: from-step}",
      "    plugins:",
      "      - ./.buildkite/plugins/hello: {greeting: hi}",
      "      - ./.buildkite/plugins/bare",
      "    agents: {queue: verify}",
      "  - key: signed-plugins-map",
      "    command: echo plugin-step-ran",
      "    plugins:",
      "      ./.buildkite/plugins/hello: {greeting: mapped}",
      "    agents: {queue: verify}",
      "  - key: signed-matrix",
      '    command: echo "matrix {{matrix}}"',
      "    matrix: [a, b]",
      "    agents: {queue: verify}",
      "",
    ].join("\n"),
    "tampered.json": JSON.stringify({
      steps: [
        { ...signed.steps[0], command: "echo tampered" },
        { ...signed.steps[1], plugins: [{ "./.buildkite/plugins/hello": { greeting: "tampered" } }] },
      ],
    }),
    // Vendored plugins: the agent runs their hooks from the checkout (a source starting with `.`).
    ".buildkite/plugins/hello/hooks/pre-command":
      '#!/bin/bash\necho "hello-plugin greeting=$BUILDKITE_PLUGIN_HELLO_GREETING step-var=$STEP_VAR"\n',
    ".buildkite/plugins/bare/hooks/pre-command": '#!/bin/bash\necho "bare-plugin-ran"\n',
    "unsigned.yml": "steps:\n  - key: unsigned\n    command: echo unsigned-ran\n    agents: {queue: verify}\n",
  });

  const token = (await agents.createAgentToken({ organizationId: org.organization.id, clusterId })).secret;
  // One agent uploads (it verifies nothing: the upload step itself is the pipeline's own, unsigned); the other
  // verifies every job it runs.
  startAgent({ token, tags: ["queue=upload"] });
  startAgent({ token, tags: ["queue=verify"], args: ["--verification-jwks-file", publicJwks] });
}, 180_000);
afterAll(stopAllAgents);

/** Commits `files` on top of the repository at `dir` (its URL, which signatures cover, unchanged). */
function commit(dir: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content, { mode: path.includes("/hooks/") ? 0o755 : 0o644 });
  }
  const git = (...args: string[]) =>
    execFileSync("git", args, {
      cwd: dir,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "e2e",
        GIT_AUTHOR_EMAIL: "e",
        GIT_COMMITTER_NAME: "e2e",
        GIT_COMMITTER_EMAIL: "e",
      },
    });
  git("add", ".");
  git("commit", "-q", "-m", "steps to upload");
}

describe("signed pipelines with the real agent", () => {
  it("runs signed jobs and refuses a tampered and an unsigned one with signature_rejected", async () => {
    const base = `/v2/organizations/${org.organization.slug}`;
    const configuration = [
      "steps:",
      "  - label: upload",
      "    agents: {queue: upload}",
      "    command: |",
      `      buildkite-agent pipeline upload --jwks-file ${privateJwks} --jwks-key-id ${KEY_ID} signed.yml`,
      "      buildkite-agent pipeline upload tampered.json",
      "      buildkite-agent pipeline upload unsigned.yml",
      "",
    ].join("\n");
    const created = await send("POST", `${base}/pipelines`, org.secret, {
      name: unique("Signed"),
      repository,
      cluster_id: clusterId,
      configuration,
    });
    expect(created.status).toBe(201);
    const slug = created.body.slug as string;
    const started = await send("POST", `${base}/pipelines/${slug}/builds`, org.secret, {
      commit: "HEAD",
      branch: "main",
    });
    expect(started.status).toBe(201);
    const number = started.body.number as number;

    let seen: Json;
    const build = await eventually(
      "the build to finish",
      async () => {
        seen = (await send("GET", `${base}/pipelines/${slug}/builds/${number}`, org.secret)).body as Json;
        return seen.finished_at ? seen : undefined;
      },
      180_000,
    ).catch((err: Error) => {
      // Say where it stopped: which jobs were in which state.
      const jobs = ((seen?.jobs ?? []) as Json[]).map((j) => `${j.step_key ?? j.label}:${j.state}`).join(", ");
      throw new Error(`${err.message}; the build is ${seen?.state}, its jobs ${jobs}`);
    });
    const byKey = (key: string) => (build.jobs as Json[]).filter((j) => j.step_key === key);
    const log = async (job: Json) =>
      (
        await fetch(`${stack.apiUrl}${base}/pipelines/${slug}/builds/${number}/jobs/${job.id}/log.txt`, {
          headers: { authorization: `Bearer ${org.secret}` },
        })
      ).text();

    const [signedJob] = byKey("signed");
    expect(signedJob).toMatchObject({ state: "passed", exit_status: 0 });
    expect(signedJob.step.signature).toMatchObject({ algorithm: "EdDSA", value: expect.stringMatching(/^eyJ/) });
    expect(await log(signedJob)).toContain("signed-ran hello");

    const [pluginJob] = byKey("signed-plugins");
    expect(pluginJob).toMatchObject({ state: "passed", exit_status: 0 });
    expect(pluginJob.step.signature.signed_fields).toEqual(expect.arrayContaining(["command", "env", "plugins"]));
    const pluginLog = await log(pluginJob);
    expect(pluginLog).toContain("hello-plugin greeting=hi step-var=from-step");
    expect(pluginLog).toContain("bare-plugin-ran");
    expect(pluginLog).toContain("plugin-step-ran");
    const [mapJob] = byKey("signed-plugins-map");
    expect(mapJob).toMatchObject({ state: "passed", exit_status: 0 });
    expect(await log(mapJob)).toContain("hello-plugin greeting=mapped");

    const matrix = byKey("signed-matrix");
    expect(matrix.map((j) => [j.state, j.command])).toEqual([
      ["passed", 'echo "matrix a"'],
      ["passed", 'echo "matrix b"'],
    ]);
    expect(await log(matrix[1])).toContain("matrix b");

    for (const key of ["tampered", "tampered-plugin", "unsigned"]) {
      const [job] = byKey(key);
      expect({ key, exit_status: job.exit_status, signal_reason: job.signal_reason }).toEqual({
        key,
        exit_status: -1,
        signal_reason: "signature_rejected",
      });
      expect(await log(job)).not.toMatch(/tampered|unsigned-ran|plugin-step-ran|hello-plugin/);
    }
    expect(build.state).toBe("failed");
  });
});
