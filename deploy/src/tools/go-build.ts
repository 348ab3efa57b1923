import { execFile, execFileSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runToCompletion } from "../host/child.js";
import type { Env } from "../host/paths.js";
import { cachedToolPath, type ToolSpec } from "./tools.js";

export interface BuildContext {
  cache: string;
  /** Folder for the build logs. */
  logsDir: string;
  env: Env;
  log: (line: string) => void;
  signal?: AbortSignal;
}

/** Raised when Go is missing or too old to build a tool; the message says what to install or set instead. */
export class ToolchainError extends Error {
  override name = "ToolchainError";
}

/** The oldest Go the launcher builds its tools with; a tool may need a newer one (ToolSpec.minGo). */
export const MIN_GO = "1.24";

/** Whether a Go version ("go1.26.8", "go1.26rc1", "go1.24") is at least a minimum ("1.26.5"); unknown forms pass. */
export function goVersionAtLeast(goVersion: string, minimum: string): boolean {
  const have = /^go(\d+)\.(\d+)(?:\.(\d+))?/.exec(goVersion);
  if (!have) return true;
  const want = minimum.split(".").map(Number);
  // A release candidate of 1.26 ("go1.26rc1") comes before 1.26.0: count its patch level as -1.
  const patch = have[3] !== undefined ? Number(have[3]) : /^go\d+\.\d+(rc|beta)/.test(goVersion) ? -1 : 0;
  const got = [Number(have[1]), Number(have[2]), patch];
  for (let i = 0; i < 3; i++) {
    const a = got[i] ?? 0;
    const b = want[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

/** Checks that `go` (1.24 or newer, or the tool's own minimum) is on PATH. */
export function checkGo(tool: ToolSpec, env: Env): void {
  const minimum = tool.minGo ?? MIN_GO;
  let version: string;
  try {
    // A build module is built with the local toolchain (GOTOOLCHAIN=local, below), so that is the one to check.
    const goEnv = tool.build.kind === "go-module" ? { ...env, GOTOOLCHAIN: "local" } : { ...env };
    version = execFileSync("go", ["env", "GOVERSION"], { env: goEnv, encoding: "utf8" }).trim();
  } catch {
    throw new ToolchainError(
      `${tool.name} ${tool.version} is not built yet and Go is not installed. Install Go ${minimum} or newer ` +
        `(https://go.dev/dl/), or set ${tool.envVar} to a ${tool.name} binary you already have.`,
    );
  }
  if (!goVersionAtLeast(version, minimum)) {
    throw new ToolchainError(
      `${tool.name} needs Go ${minimum} or newer to build, found ${version}. Upgrade Go or set ${tool.envVar}.`,
    );
  }
}

/**
 * Builds a tool into its cache folder unless it is there already. The binary is built into a temporary folder
 * beside the cache folder and renamed into place, so a concurrent or interrupted build never leaves half a binary.
 */
export async function ensureTool(tool: ToolSpec, ctx: BuildContext): Promise<string> {
  const target = cachedToolPath(ctx.cache, tool);
  if (exists(target)) return target;
  checkGo(tool, ctx.env);
  ctx.log(`building ${tool.name} ${tool.version} (first run only, ${tool.buildTime})…`);
  const started = Date.now();
  const binRoot = join(ctx.cache, "bin");
  mkdirSync(binRoot, { recursive: true });
  mkdirSync(ctx.logsDir, { recursive: true });
  const work = mkdtempSync(join(binRoot, `.build-${tool.name}-`));
  const logFile = join(ctx.logsDir, `build-${tool.name}.log`);
  const goEnv = { ...ctx.env, GOBIN: work };
  try {
    if (tool.build.kind === "go-install") {
      await runToCompletion({
        name: `build-${tool.name}`,
        what: `building ${tool.name}`,
        command: "go",
        args: ["install", tool.build.pkg],
        env: goEnv,
        cwd: work,
        logFile,
        signal: ctx.signal,
      });
    } else if (tool.build.kind === "ferretdb") {
      await buildFerretDb(tool, tool.build, work, goEnv, logFile, ctx.signal);
    } else {
      await buildGoModule(tool, tool.build.dir, tool.build.pkg, work, goEnv, logFile, ctx.signal);
    }
    mkdirSync(dirname(target), { recursive: true });
    renameSync(join(work, tool.binary), target);
  } catch (err) {
    if (err instanceof Error) err.message += `\n(build log: ${logFile})`;
    throw err;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  ctx.log(`built ${tool.name} ${tool.version} in ${Math.round((Date.now() - started) / 1000)} s → ${target}`);
  return target;
}

/** The folder of the patches applied to FerretDB's source (deploy/ferretdb, beside src/ and dist/). */
export const FERRETDB_PATCHES_DIR = fileURLToPath(new URL("../../ferretdb/", import.meta.url));

/** Downloads a Go module (`path@version`) into the module cache and returns its folder there. */
async function downloadModule(module: string, cwd: string, goEnv: NodeJS.ProcessEnv, signal?: AbortSignal) {
  const downloaded = await new Promise<string>((resolve, reject) => {
    execFile(
      "go",
      ["mod", "download", "-json", module],
      { env: goEnv, cwd, encoding: "utf8", maxBuffer: 16 * 1024 * 1024, signal },
      (err, stdout, stderr) =>
        err ? reject(new Error(`go mod download ${module} failed: ${stderr || err.message}`)) : resolve(stdout),
    );
  });
  const dir = (JSON.parse(downloaded) as { Dir?: string; Error?: string }).Dir;
  if (dir === undefined) throw new Error(`go mod download ${module} did not return a module directory`);
  return dir;
}

/**
 * FerretDB v1's own `go install` builds a binary that panics at start, because build/version/version.txt is
 * generated by its release tooling. So: download the module, copy it, apply our patches (`git apply`, which works
 * outside a repository too), put patched copies of the dependencies we patch beside it (a replace directive each),
 * write the version file, build the copy.
 */
async function buildFerretDb(
  tool: ToolSpec,
  build: Extract<ToolSpec["build"], { kind: "ferretdb" }>,
  work: string,
  goEnv: NodeJS.ProcessEnv,
  logFile: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  const src = join(work, "src");
  const copyPatched = async (module: string, to: string, patches: readonly string[]) => {
    cpSync(await downloadModule(module, work, goEnv, signal), to, { recursive: true });
    makeWritable(to);
    for (const patch of patches) {
      await runToCompletion({
        name: `build-${tool.name}`,
        what: `applying ${patch} to ${module}`,
        command: "git",
        args: ["apply", "--whitespace=nowarn", join(FERRETDB_PATCHES_DIR, patch)],
        env: goEnv,
        cwd: to,
        logFile,
        signal,
      });
    }
  };
  await copyPatched(build.module, src, build.patches);
  for (const dep of build.dependencies ?? []) {
    await copyPatched(dep.module, join(src, dep.dir), dep.patches);
    await runToCompletion({
      name: `build-${tool.name}`,
      what: `using the patched ${dep.module}`,
      command: "go",
      args: ["mod", "edit", `-replace=${dep.module.replace(/@[^@]*$/, "")}=./${dep.dir}`],
      env: goEnv,
      cwd: src,
      logFile,
      signal,
    });
  }
  writeFileSync(join(src, "build", "version", "version.txt"), `${tool.version}\n`);
  await runToCompletion({
    name: `build-${tool.name}`,
    what: `building ${tool.name}`,
    command: "go",
    args: ["build", "-o", join(work, tool.binary), "./cmd/ferretdb"],
    env: { ...goEnv, GOFLAGS: "-mod=mod" },
    cwd: src,
    logFile,
    signal,
  });
}

/** The folder of our Go build modules (deploy/<dir>, beside src/ and dist/), for example deploy/buildkite-agent. */
export function goModuleDir(dir: string): string {
  return fileURLToPath(new URL(`../../${dir}/`, import.meta.url));
}

/**
 * Builds a package with one of our build modules: the folder (go.mod, go.sum, replaced packages) is copied into the
 * work folder, so that the checkout stays untouched, and `go build` runs there. GOFLAGS=-mod=mod lets Go add a
 * go.sum line the copy lacks instead of failing; GOTOOLCHAIN=local keeps Go from trying to download the toolchain
 * the go.mod names (checkGo has made sure the local one is new enough).
 */
async function buildGoModule(
  tool: ToolSpec,
  dir: string,
  pkg: string,
  work: string,
  goEnv: NodeJS.ProcessEnv,
  logFile: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  const src = join(work, "src");
  cpSync(goModuleDir(dir), src, { recursive: true });
  makeWritable(src);
  await runToCompletion({
    name: `build-${tool.name}`,
    what: `building ${tool.name}`,
    command: "go",
    args: ["build", "-o", join(work, tool.binary), pkg],
    env: { ...goEnv, GOFLAGS: "-mod=mod", GOTOOLCHAIN: "local" },
    cwd: src,
    logFile,
    signal,
  });
}

/** chmod -R u+w: files from the Go module cache are read-only. */
function makeWritable(path: string): void {
  const st = statSync(path);
  chmodSync(path, st.mode | 0o200);
  if (st.isDirectory()) for (const entry of readdirSync(path)) makeWritable(join(path, entry));
}

function exists(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
