// The Go tests of our drjosh.dev/zzglob adapter (deploy/buildkite-agent/zzglob), reported as one Jest test per Go
// test so that a failure shows by name. The agent's artifact upload and download match paths with it.
import { execFile, execFileSync } from "node:child_process";
import { join } from "node:path";
import { goModuleDir } from "./go-build.js";

const dir = join(goModuleDir("buildkite-agent"), "zzglob");
// The adapter is a module of its own; build it with the local Go, adding a missing go.sum line rather than failing.
const env = { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod" };

interface GoTestEvent {
  Action: string;
  Package?: string;
  Test?: string;
  Output?: string;
}

interface GoTestResult {
  action: "pass" | "fail" | "skip";
  output: string;
}

/** The Go tests, as "<package> <Test>", listed while Jest collects this file; or why they could not be listed. */
function listGoTests(): { tests: Array<{ pkg: string; name: string }> } | { error: string } {
  let out: string;
  try {
    out = execFileSync("go", ["test", "-list", ".", "./..."], {
      cwd: dir,
      env,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === "ENOENT") {
      return {
        error:
          "Go is not installed (no `go` on PATH), so the zzglob adapter's Go tests cannot run. Install Go 1.26.5 " +
          "or newer (the buildkite-agent build needs it too).",
      };
    }
    return { error: `go test -list failed in ${dir}:\n${e.stderr ?? e.message}` };
  }
  const tests: Array<{ pkg: string; name: string }> = [];
  let pending: string[] = [];
  for (const line of out.split("\n")) {
    // The names of one package come first, then "ok  <package>  <time>".
    const ok = /^ok\s+(\S+)/.exec(line);
    if (ok?.[1]) {
      for (const name of pending) tests.push({ pkg: ok[1], name });
      pending = [];
    } else if (/^(Test|Example|Fuzz)\w*$/.test(line.trim())) {
      pending.push(line.trim());
    }
  }
  if (tests.length === 0) return { error: `go test -list found no tests in ${dir}:\n${out}` };
  return { tests };
}

const listed = listGoTests();

describe("zzglob adapter (go test)", () => {
  if ("error" in listed) {
    it("runs the adapter's Go tests", () => {
      throw new Error(listed.error);
    });
    return;
  }

  const results = new Map<string, GoTestResult>();
  let runFailure = "";

  beforeAll(async () => {
    const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve) => {
      // A failing test makes `go test` exit 1; the JSON on stdout says which.
      execFile(
        "go",
        ["test", "-json", "./..."],
        { cwd: dir, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
        (err, out, errOut) => resolve({ stdout: out, stderr: errOut || (err && !out ? err.message : "") }),
      );
    });
    const outputs = new Map<string, string[]>();
    for (const line of stdout.split("\n")) {
      if (!line.startsWith("{")) continue;
      const event = JSON.parse(line) as GoTestEvent;
      if (event.Test === undefined) {
        if (event.Action === "output" && event.Output) runFailure += event.Output;
        continue;
      }
      // Subtests ("TestX/case") belong to their top-level test: their output is shown with it.
      const top = event.Test.split("/")[0] ?? event.Test;
      const key = `${event.Package} ${top}`;
      if (event.Action === "output" && event.Output) {
        const lines = outputs.get(key) ?? [];
        lines.push(event.Output);
        outputs.set(key, lines);
      }
      if ((event.Action === "pass" || event.Action === "fail" || event.Action === "skip") && top === event.Test) {
        results.set(key, { action: event.Action, output: (outputs.get(key) ?? []).join("") });
      }
    }
    runFailure += stderr;
  }, 180_000);

  for (const { pkg, name } of listed.tests) {
    it(name, () => {
      const result = results.get(`${pkg} ${name}`);
      if (result === undefined) {
        throw new Error(`go test -json ./... did not report ${name} (${pkg}):\n${runFailure}`);
      }
      if (result.action === "skip")
        throw new Error(`${name} was skipped by Go, which this suite does not allow:\n${result.output}`);
      if (result.action === "fail") throw new Error(`${name} failed:\n${result.output}`);
    });
  }
});
