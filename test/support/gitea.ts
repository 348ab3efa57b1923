import { existsSync, mkdtempSync } from "node:fs";
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

/**
 * Starts a Gitea of its own for a suite (building it first when the cache has none), in a temporary folder on a free
 * port. The caller stops it.
 */
export async function startTestGitea(): Promise<GiteaServer> {
  const root = mkdtempSync(join(tmpdir(), "conveyor-gitea-"));
  const log = (line: string) => process.stderr.write(`[gitea] ${line}\n`);
  const binary = await giteaBinary(process.env, {
    cache: cacheDir(process.env),
    logsDir: join(root, "logs"),
    env: process.env,
    log,
  });
  return startGitea({ binary, dataDir: join(root, "gitea"), env: process.env, log });
}
