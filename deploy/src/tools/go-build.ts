import { execFile, execFileSync } from "node:child_process";
import {
  accessSync,
  chmodSync,
  constants,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runToCompletion } from "../host/child.js";
import type { Env } from "../host/paths.js";
import { withBuildLock } from "./build-lock.js";
import { cachedToolPath, type GoModuleBuild, type ToolSpec } from "./tools.js";

export interface BuildContext {
  cache: string;
  /** Folder for the build logs. */
  logsDir: string;
  env: Env;
  log: (line: string) => void;
  signal?: AbortSignal;
  /** How often a build under way says how far it is (30 s). */
  progressEveryMs?: number;
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
  if (tool.build.kind === "go-module" && tool.build.env?.CGO_ENABLED === "1") {
    // A cgo build calls the C compiler Go names (`go env CC`, gcc by default).
    let cc = "";
    try {
      cc = execFileSync("go", ["env", "CC"], { env: { ...env, ...tool.build.env }, encoding: "utf8" }).trim();
    } catch {
      // Reported below.
    }
    const compiler = cc.split(/\s+/)[0] ?? "";
    if (compiler === "" || !onPath(compiler, env)) {
      throw new ToolchainError(
        `${tool.name} ${tool.version} is built with cgo and needs a C compiler (${compiler || "gcc"}), which is not ` +
          `installed. Install it (apt-get install gcc), or set ${tool.envVar} to a ${tool.name} binary you already have.`,
      );
    }
  }
}

/** Whether a command (a name looked up on PATH, or a path) can be run. */
function onPath(command: string, env: Env): boolean {
  const candidates = command.includes("/") ? [command] : (env.PATH ?? "").split(":").map((d) => join(d, command));
  return candidates.some((file) => {
    try {
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  });
}

/** The arguments of `go build` for a build module's package, written to `output`. Pure. */
export function goModuleBuildArgs(build: GoModuleBuild, output: string): string[] {
  return [
    "build",
    // Each package's name as it is compiled, into the build log: the progress messages count them.
    "-v",
    ...(build.tags && build.tags.length > 0 ? ["-tags", build.tags.join(",")] : []),
    ...(build.ldflags && build.ldflags.length > 0 ? ["-ldflags", build.ldflags.join(" ")] : []),
    "-o",
    output,
    build.pkg,
  ];
}

/**
 * The environment of a build module's `go build`: the caller's, GOFLAGS=-mod=mod (Go adds a go.sum line the copy
 * lacks instead of failing), GOTOOLCHAIN=local (no download of the toolchain the go.mod names: checkGo made sure the
 * local one is new enough), and the tool's own settings last. Pure.
 */
export function goModuleBuildEnv(build: GoModuleBuild, goEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...goEnv, GOFLAGS: "-mod=mod", GOTOOLCHAIN: "local", ...build.env };
}

/** The progress message of a build under way for `elapsedMs`, having compiled `packages` packages so far. Pure. */
export function buildProgressLine(tool: ToolSpec, elapsedMs: number, packages: number): string {
  const seconds = Math.round(elapsedMs / 1000);
  const elapsed = seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  const compiled = packages > 0 ? `, ${packages} packages compiled` : "";
  return `still building ${tool.name} ${tool.version}: ${elapsed} so far${compiled} (about ${tool.buildTime.replace(/^~/, "")} in all)…`;
}

/** How many packages a build log names (the lines `go build -v` writes, one package path each). Pure. */
export function countCompiledPackages(log: string): number {
  let count = 0;
  for (const line of log.split("\n")) if (/^[\w.\-~]+(\/[\w.\-~+]+)*$/.test(line.trim())) count++;
  return count;
}

/**
 * Builds a tool into its cache folder unless it is there already. The binary (and the files a go-module build
 * copies beside it) is built into a temporary folder beside the cache folder and renamed into place, so a concurrent
 * or interrupted build never leaves half a binary. One process on this machine builds a tool at a time (a lock
 * folder beside the cache folder); the others wait for its binary instead of building it again. A progress message
 * every `progressEveryMs` (30 s) says how long it has taken and how many packages are compiled.
 */
export async function ensureTool(tool: ToolSpec, ctx: BuildContext): Promise<string> {
  const target = cachedToolPath(ctx.cache, tool);
  if (exists(target)) return target;
  checkGo(tool, ctx.env);
  const wait = (owner: number | undefined) =>
    ctx.log(`waiting for ${tool.name} ${tool.version}, which another process${owner ? ` (pid ${owner})` : ""} builds…`);
  return withBuildLock(`${dirname(target)}.lock`, { onWait: wait, signal: ctx.signal }, async () => {
    if (exists(target)) return target;
    await buildTool(tool, target, ctx);
    return target;
  });
}

async function buildTool(tool: ToolSpec, target: string, ctx: BuildContext): Promise<void> {
  ctx.log(`building ${tool.name} ${tool.version} (first run only, ${tool.buildTime})…`);
  const started = Date.now();
  const binRoot = join(ctx.cache, "bin");
  mkdirSync(binRoot, { recursive: true });
  mkdirSync(ctx.logsDir, { recursive: true });
  const work = mkdtempSync(join(binRoot, `.build-${tool.name}-`));
  const out = join(work, "out");
  mkdirSync(out);
  const logFile = join(ctx.logsDir, `build-${tool.name}.log`);
  const logStart = existsSync(logFile) ? statSync(logFile).size : 0;
  const goEnv = { ...ctx.env, GOBIN: out };
  const progress = setInterval(() => {
    let packages = 0;
    try {
      packages = countCompiledPackages(readFileSync(logFile).subarray(logStart).toString("utf8"));
    } catch {
      // No log yet: the time alone.
    }
    ctx.log(buildProgressLine(tool, Date.now() - started, packages));
  }, ctx.progressEveryMs ?? 30_000);
  progress.unref();
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
      await buildGoModule(tool, tool.build, work, goEnv, logFile, ctx.signal);
    }
    const folder = dirname(target);
    if (tool.build.kind === "go-module" && tool.build.files) {
      // The binary and its files go into place together: the binary is there only when its files are.
      rmSync(folder, { recursive: true, force: true });
      renameSync(out, folder);
    } else {
      mkdirSync(folder, { recursive: true });
      renameSync(join(out, tool.binary), target);
    }
  } catch (err) {
    if (err instanceof Error) err.message += `\n(build log: ${logFile})`;
    throw err;
  } finally {
    clearInterval(progress);
    rmSync(work, { recursive: true, force: true });
  }
  ctx.log(`built ${tool.name} ${tool.version} in ${Math.round((Date.now() - started) / 1000)} s → ${target}`);
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
    args: ["build", "-o", join(work, "out", tool.binary), "./cmd/ferretdb"],
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
 * work folder, so that the checkout stays untouched, and `go build` runs there (goModuleBuildArgs, goModuleBuildEnv).
 * The module folders the binary reads at run time are copied beside it, into work/out.
 */
async function buildGoModule(
  tool: ToolSpec,
  build: GoModuleBuild,
  work: string,
  goEnv: NodeJS.ProcessEnv,
  logFile: string,
  signal: AbortSignal | undefined,
): Promise<void> {
  const src = join(work, "src");
  const out = join(work, "out");
  cpSync(goModuleDir(build.dir), src, { recursive: true });
  makeWritable(src);
  const env = goModuleBuildEnv(build, goEnv);
  await runToCompletion({
    name: `build-${tool.name}`,
    what: `building ${tool.name}`,
    command: "go",
    args: goModuleBuildArgs(build, join(out, tool.binary)),
    env,
    cwd: src,
    logFile,
    signal,
  });
  if (build.files) {
    const moduleDir = await downloadModule(build.files.module, src, env, signal);
    for (const path of build.files.paths) cpSync(join(moduleDir, path), join(out, path), { recursive: true });
    makeWritable(out);
  }
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
