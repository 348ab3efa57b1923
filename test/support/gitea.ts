import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cacheDir, cachedToolPath, checkGo, GITEA, type GiteaServer, giteaBinary, startGitea } from "@conveyor/deploy";
import { itRequires, type Precondition } from "./not-run.js";

// A real Gitea for the suites that need a forge (test/webhooks/gitea.e2e.test.ts; docs/webhooks.md): GITEA_BIN, or
// the build of deploy/gitea in the tool cache, built by the first suite that asks (about 6 minutes on 2 cores, once
// per machine: other processes wait for that build) and started in a temporary folder on a free port.

/** Why Gitea cannot be had here, or undefined when it is there or can be built. */
function giteaMissing(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const given = env.GITEA_BIN?.trim();
  if (given) return existsSync(given) ? undefined : `GITEA_BIN names ${given}, which does not exist`;
  if (existsSync(cachedToolPath(cacheDir(env), GITEA))) return undefined;
  try {
    checkGo(GITEA, env);
    return undefined;
  } catch (err) {
    return `it is not built and cannot be: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** What the forge suites need: a Gitea binary, or Go and a C compiler to build one. */
export const giteaPrecondition: Precondition = {
  name: `Gitea ${GITEA.version} (GITEA_BIN, or built into the tool cache from deploy/gitea with Go and a C compiler)`,
  missing: giteaMissing(),
};

/** Jest's `it` for tests on a real Gitea: without one they fail with the reason (test/support/not-run.ts). */
export const itWithGitea = itRequires(giteaPrecondition);

/** How long a suite's beforeAll may take to build Gitea the first time, and start it. */
export const GITEA_SETUP_TIMEOUT_MS = 20 * 60_000;

const started: Array<{ gitea: GiteaServer; root: string }> = [];

/**
 * Starts a Gitea of its own for a suite (building it first when the cache has none; the build's log goes to
 * .test-results/build-gitea.log), in a temporary folder on a free port. `stopTestGiteas` in an afterAll stops it and
 * removes its folder (kept with CONVEYOR_KEEP_TEST_DATA=1). `workDir` is a folder beside its data for working copies.
 */
export async function startTestGitea(): Promise<GiteaServer & { workDir: string }> {
  const root = mkdtempSync(join(tmpdir(), "conveyor-gitea-"));
  const log = (line: string) => process.stderr.write(`[gitea] ${line}\n`);
  const binary = await giteaBinary(process.env, {
    cache: cacheDir(process.env),
    logsDir: join(__dirname, "..", "..", ".test-results"),
    env: process.env,
    log,
  });
  const gitea = await startGitea({ binary, dataDir: join(root, "gitea"), env: process.env, log });
  started.push({ gitea, root });
  return Object.assign(gitea, { workDir: join(root, "work") });
}

/** Stops the Gitea servers this process started and removes their folders. */
export async function stopTestGiteas(): Promise<void> {
  for (const { gitea, root } of started.splice(0)) {
    await gitea.stop();
    if (process.env.CONVEYOR_KEEP_TEST_DATA !== "1") rmSync(root, { recursive: true, force: true });
  }
}
