import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  dataPaths,
  isRecordedProcessAlive,
  readStackFile,
  StackAlreadyRunningError,
  startStack,
} from "@conveyor/deploy";

/** A value the test stack's global setup exported. */
function stackEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set: run this suite through Jest's "stack" project`);
  return value;
}

const dataDir = stackEnv("CONVEYOR_TEST_DATA_DIR");
const apiUrl = stackEnv("CONVEYOR_API_URL");
const repoRoot = join(__dirname, "..");

describe("the launcher against a data directory whose stack is running", () => {
  it("records the running stack in stack.json with live processes", () => {
    const record = readStackFile(dataPaths(dataDir));
    expect(record?.state).toBe("running");
    expect(record?.info?.apiUrl).toBe(apiUrl);
    expect(record?.processes.map((p) => p.name).sort()).toEqual(
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
