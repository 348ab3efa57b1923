import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ALL_SCOPES,
  bootstrap,
  bootstrapStack,
  type Credentials,
  dataPaths,
  isRecordedProcessAlive,
  readStackFile,
  StackAlreadyRunningError,
  startStack,
} from "@conveyor/deploy";
import { IdentityService } from "@conveyor/proto/identity";
import { createServiceClient } from "@conveyor/runtime";

/** A value the test stack's global setup exported. */
function stackEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set: run this suite through Jest's "stack" project`);
  return value;
}

const dataDir = stackEnv("CONVEYOR_TEST_DATA_DIR");
const apiUrl = stackEnv("CONVEYOR_API_URL");
const repoRoot = join(__dirname, "..");
const info = readStackFile(dataPaths(dataDir))?.info;
const identity = createServiceClient(IdentityService, stackEnv("IDENTITY_URL"));

describe("the launcher against a data directory whose stack is running", () => {
  it("records the running stack in stack.json with live processes", () => {
    const record = readStackFile(dataPaths(dataDir));
    expect(record?.state).toBe("running");
    expect(record?.info?.apiUrl).toBe(apiUrl);
    // With CONVEYOR_REPLICAS=2 the processes are builds-1, builds-2, …: each service is there either way.
    expect(record?.processes.map((p) => p.name.replace(/-\d+$/, "")).sort()).toEqual(
      expect.arrayContaining(["agents", "artifacts", "builds", "gateway", "identity", "pipelines"]),
    );
    for (const p of record?.processes ?? []) expect(isRecordedProcessAlive(p)).toBe(true);
  });

  it("refuses a second start from the same data directory without touching the running stack", async () => {
    const before = readFileSync(dataPaths(dataDir).stackFile, "utf8");
    await expect(startStack({ repoRoot, dataDir, ports: "free" })).rejects.toThrow(StackAlreadyRunningError);
    expect(readFileSync(dataPaths(dataDir).stackFile, "utf8")).toBe(before);
    const res = await fetch(`${apiUrl}/healthz`);
    expect(res.status).toBe(200);
  });

  it("makes a second `start` from the CLI say that the stack is already running, and exit 1", () => {
    const cli = spawnSync(process.execPath, [join(repoRoot, "deploy/dist/cli.js"), "start"], {
      env: { ...process.env, CONVEYOR_DATA_DIR: dataDir },
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(cli.stderr).toContain(`A conveyor stack is already running from ${dataDir}`);
    expect(cli.stderr).toContain(`at ${apiUrl}`);
    expect(cli.status).toBe(1);
  });

  it("reports the running stack with `status`", () => {
    const cli = spawnSync(process.execPath, [join(repoRoot, "deploy/dist/cli.js"), "status"], {
      env: { ...process.env, CONVEYOR_DATA_DIR: dataDir },
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(cli.status).toBe(0);
    expect(cli.stdout).toContain(`REST API ${apiUrl}/v2`);
  });
});

describe("bootstrap of a running stack", () => {
  const scratch = mkdtempSync(join(tmpdir(), "conveyor-bootstrap-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("reuses the organization, the admin and both tokens on a second run", async () => {
    if (!info) throw new Error("stack.json has no stack info");
    const before = JSON.parse(readFileSync(dataPaths(dataDir).credentialsFile, "utf8")) as Credentials;
    const { credentials, reused } = await bootstrapStack(info);
    expect(reused).toEqual({ organization: true, user: true, apiToken: true, agentToken: true });
    expect(credentials.apiToken.secret).toBe(stackEnv("CONVEYOR_API_TOKEN"));
    expect(credentials.agentToken.secret).toBe(stackEnv("CONVEYOR_AGENT_TOKEN"));
    expect(credentials.organization).toEqual(before.organization);
    expect(credentials.user).toEqual(before.user);
  });

  it("replaces a saved API token that was revoked, keeping the rest", async () => {
    if (!info) throw new Error("stack.json has no stack info");
    // A copy of credentials.json naming a token of its own, so the suite's shared token stays valid.
    const file = join(scratch, "credentials.json");
    copyFileSync(dataPaths(dataDir).credentialsFile, file);
    const saved = JSON.parse(readFileSync(file, "utf8")) as Credentials;
    const extra = await identity.createAccessToken({ userId: saved.user.id, scopes: ["read_builds"] });
    await identity.revokeAccessToken({ secret: extra.secret });
    const doctored = {
      ...saved,
      apiToken: { id: extra.token?.id ?? "", secret: extra.secret, scopes: ["read_builds"] },
    };
    writeFileSync(file, JSON.stringify(doctored));

    const { credentials, reused } = await bootstrap({
      identityUrl: info.serviceUrls.identity,
      agentsUrl: info.serviceUrls.agents,
      apiUrl: info.apiUrl,
      agentUrl: info.agentUrl,
      credentialsFile: file,
    });
    expect(reused).toEqual({ organization: true, user: true, apiToken: false, agentToken: true });
    expect(credentials.apiToken.secret).not.toBe(extra.secret);
    const res = await fetch(`${info.apiUrl}/v2/organizations/${credentials.organization.slug}`, {
      headers: { authorization: `Bearer ${credentials.apiToken.secret}` },
    });
    expect(res.status).toBe(200);
    const principal = await identity.authenticateAccessToken({ secret: credentials.apiToken.secret });
    expect(principal.principal?.token?.scopes).toEqual([...ALL_SCOPES]);
  });
});
