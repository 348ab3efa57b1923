// Shared first steps of `npm start`, `npm test` and `npm run bench`: check Node, install what is missing, build.
// Plain Node with no dependencies, because node_modules may not exist yet when these run.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");

const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/** Prints a progress line. */
export function say(line) {
  process.stdout.write(`conveyor: ${line}\n`);
}

/** Exits with a clear message unless Node is 20.19 or newer (the MongoDB driver and require(esm) need it). */
export function checkNode() {
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (major < 20 || (major === 20 && minor < 19)) {
    process.stderr.write(`conveyor: Node 20.19 or newer is required, this is Node ${process.versions.node}\n`);
    process.exit(1);
  }
}

/** Runs a command with inherited output; resolves with its exit code. */
export function run(command, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: repoRoot, stdio: "inherit", ...options });
    child.once("error", (err) => {
      process.stderr.write(`conveyor: could not run ${command}: ${err.message}\n`);
      resolve(127);
    });
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

/** Runs a command with `env` added to the environment; resolves with the exit code and the output it captured. */
function capture(command, args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    let output = "";
    child.stdout.on("data", (d) => {
      output += d;
    });
    child.stderr.on("data", (d) => {
      output += d;
    });
    child.once("error", (err) => resolve({ code: 127, output: err.message }));
    child.once("close", (code) => resolve({ code: code ?? 1, output }));
  });
}

/**
 * `npm ci`, or, when npm refuses the lock file because it lacks entries for other platforms' optional binaries
 * (a registry that does not serve those cannot record them), `npm install --no-save`: the same locked versions,
 * and the lock file is left as it is.
 */
async function installDependencies() {
  say("installing dependencies (npm ci)…");
  const ci = await capture(npm, ["ci", "--no-audit", "--no-fund"]);
  if (ci.code === 0) return 0;
  if (!/in sync|Missing: .* from lock file/.test(ci.output)) {
    process.stderr.write(ci.output);
    return ci.code;
  }
  say("npm ci finds optional packages of other platforms missing from the lock file; using npm install --no-save");
  return run(npm, ["install", "--no-save", "--no-audit", "--no-fund"]);
}

/** Whether `npm ci` is needed: no node_modules, or package-lock.json changed since the last install. */
export function needsInstall() {
  const marker = join(repoRoot, "node_modules", ".package-lock.json");
  if (!existsSync(marker)) return true;
  return statSync(join(repoRoot, "package-lock.json")).mtimeMs > statSync(marker).mtimeMs;
}

/** A binary of an installed npm package, for example node_modules/.bin/turbo. */
export function bin(name) {
  return join(repoRoot, "node_modules", ".bin", name);
}

/** The environment for Turborepo: no telemetry, no update check. */
export const turboEnv = { ...process.env, TURBO_TELEMETRY_DISABLED: "1", TURBO_NO_UPDATE_NOTIFIER: "1" };

/** Installs dependencies when needed and builds every package; resolves with an exit code (0 on success). */
export async function installAndBuild() {
  checkNode();
  if (needsInstall()) {
    const code = await installDependencies();
    if (code !== 0) {
      process.stderr.write("conveyor: installing the dependencies failed; see the output above\n");
      return code;
    }
  }
  say("building (turbo run build)…");
  const started = Date.now();
  const code = await run(bin("turbo"), ["run", "build", "--output-logs=errors-only"], { env: turboEnv });
  if (code !== 0) {
    process.stderr.write("conveyor: the build failed; see the output above\n");
    return code;
  }
  say(`built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}

/** Where the browser suites (test/browser) find Chromium: Debian's package, which `npm test` installs when missing. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/**
 * Where `ensureChromium` records why Chromium could not be installed, so that the browser suites fail with that
 * reason (test/support/browser.ts) rather than a bare "not found".
 */
export const CHROMIUM_INSTALL_FILE = join(repoRoot, ".test-results", "chromium-install.json");

/**
 * Installs Debian's Chromium with apt-get when it is missing (as root, or through `sudo -n`), once: an installed
 * browser is used as it is. Resolves with whether it is there and, when not, why. The browser suites then fail with
 * that reason; they are never skipped silently.
 * @returns {Promise<{ok: boolean, reason?: string}>}
 */
export async function ensureChromium() {
  rmSync(CHROMIUM_INSTALL_FILE, { force: true });
  if (existsSync(CHROMIUM_PATH)) return { ok: true };
  const failed = (reason) => {
    mkdirSync(dirname(CHROMIUM_INSTALL_FILE), { recursive: true });
    writeFileSync(CHROMIUM_INSTALL_FILE, `${JSON.stringify({ path: CHROMIUM_PATH, reason })}\n`);
    say(`Chromium could not be installed, the browser suites will fail: ${reason}`);
    return { ok: false, reason };
  };
  if (process.platform !== "linux" || !existsSync("/usr/bin/apt-get")) {
    return failed(`${CHROMIUM_PATH} is missing and this is not a system with apt-get to install it`);
  }
  const asRoot = process.getuid?.() === 0 ? [] : ["sudo", "-n"];
  const apt = (...args) => {
    const [command, ...rest] = [...asRoot, "apt-get", ...args];
    return capture(command, rest, { DEBIAN_FRONTEND: "noninteractive" });
  };
  say(`installing Chromium for the browser suites (${[...asRoot, "apt-get install -y chromium"].join(" ")})…`);
  const started = Date.now();
  let install = await apt("install", "-y", "-q", "chromium");
  if (install.code !== 0) {
    // A fresh system's package lists may not know the package yet: read them once, then try again.
    const update = await apt("update", "-q");
    if (update.code !== 0) return failed(`apt-get update failed (exit ${update.code}): ${lastLines(update.output)}`);
    install = await apt("install", "-y", "-q", "chromium");
  }
  if (install.code !== 0)
    return failed(`apt-get install chromium failed (exit ${install.code}): ${lastLines(install.output)}`);
  if (!existsSync(CHROMIUM_PATH)) return failed(`apt-get installed chromium, but ${CHROMIUM_PATH} is not there`);
  say(`installed Chromium in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { ok: true };
}

/** The last lines of a command's output, for a one-line reason. */
function lastLines(output, count = 3) {
  return output.trim().split("\n").slice(-count).join(" / ");
}
