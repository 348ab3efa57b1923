import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  buildProgressLine,
  checkGo,
  countCompiledPackages,
  FERRETDB_PATCHES_DIR,
  goModuleBuildArgs,
  goModuleBuildEnv,
  goModuleDir,
  goVersionAtLeast,
  MIN_GO,
  ToolchainError,
} from "./go-build.js";
import { BUILDKITE_AGENT, cachedToolPath, FERRETDB, GITEA } from "./tools.js";

describe("FerretDB patches", () => {
  const patches = FERRETDB.build.kind === "ferretdb" ? FERRETDB.build.patches : [];

  it("are all in deploy/ferretdb and are git patches of FerretDB's source", () => {
    expect(patches.length).toBeGreaterThan(0);
    for (const patch of patches) {
      const file = join(FERRETDB_PATCHES_DIR, patch);
      expect(existsSync(file)).toBe(true);
      expect(readFileSync(file, "utf8")).toMatch(/^diff --git a\/internal\//m);
    }
  });

  it("of dependencies are in deploy/ferretdb too, each for a module at a pinned version in its own folder", () => {
    const deps = FERRETDB.build.kind === "ferretdb" ? (FERRETDB.build.dependencies ?? []) : [];
    expect(deps.map((d) => d.module)).toEqual(["modernc.org/libc@v1.55.3", "modernc.org/sqlite@v1.32.0"]);
    expect(new Set(deps.map((d) => d.dir)).size).toBe(deps.length);
    for (const dep of deps) {
      expect(dep.module).toMatch(/^[\w.\-/]+@v\d+\.\d+\.\d+$/);
      expect(dep.dir).toMatch(/^conveyor-[a-z]+$/);
      for (const patch of dep.patches) {
        expect(readFileSync(join(FERRETDB_PATCHES_DIR, patch), "utf8")).toMatch(/^diff --git a\//m);
      }
    }
  });

  it("mark the cached binary with a patch level, so a changed patch is rebuilt", () => {
    expect(FERRETDB.version).toMatch(/^v1\.24\.2-conveyor\.\d+$/);
  });
});

describe("the buildkite-agent build module", () => {
  const build = BUILDKITE_AGENT.build;
  const dir = build.kind === "go-module" ? goModuleDir(build.dir) : "";

  it("is deploy/buildkite-agent: a go.mod that pins the agent version the tool spec names, and the zzglob adapter", () => {
    expect(build).toEqual({ kind: "go-module", dir: "buildkite-agent", pkg: "github.com/buildkite/agent/v3" });
    const goMod = readFileSync(join(dir, "go.mod"), "utf8");
    const upstream = BUILDKITE_AGENT.version.replace(/-conveyor\.\d+$/, "");
    expect(goMod).toContain(`github.com/buildkite/agent/v3 ${upstream}`);
    expect(goMod).toMatch(/^replace drjosh\.dev\/zzglob => \.\/zzglob$/m);
    expect(existsSync(join(dir, "go.sum"))).toBe(true);
    expect(existsSync(join(dir, "zzglob", "zzglob.go"))).toBe(true);
  });

  it("marks the cached binary with the build module's level, so a changed adapter is rebuilt", () => {
    expect(BUILDKITE_AGENT.version).toMatch(/^v3\.137\.0-conveyor\.\d+$/);
  });

  it("asks for the Go its go.mod requires", () => {
    const goLine = /^go (\S+)$/m.exec(readFileSync(join(dir, "go.mod"), "utf8"))?.[1];
    expect(BUILDKITE_AGENT.minGo).toBe(goLine);
  });
});

describe("goVersionAtLeast", () => {
  it.each([
    ["go1.26.8", "1.26.5", true],
    ["go1.26.5", "1.26.5", true],
    ["go1.26.4", "1.26.5", false],
    ["go1.27", "1.26.5", true],
    ["go1.26rc1", "1.26.0", false],
    ["go1.24.0", MIN_GO, true],
    ["go1.23.9", MIN_GO, false],
    ["go2.0.0", MIN_GO, true],
    ["devel +abc", MIN_GO, true],
  ])("%s against %s: %s", (version, minimum, ok) => {
    expect(goVersionAtLeast(version, minimum)).toBe(ok);
  });
});

describe("the Gitea build module", () => {
  const build = GITEA.build;
  if (build.kind !== "go-module") throw new Error("Gitea is a go-module build");
  const dir = goModuleDir(build.dir);
  const goMod = readFileSync(join(dir, "go.mod"), "utf8");

  it("is deploy/gitea: a go.mod that requires Gitea v1.26.0 as a tool, with Gitea's seven replace lines", () => {
    expect(goMod).toMatch(/^tool code\.gitea\.io\/gitea$/m);
    expect(goMod).toMatch(/^\tcode\.gitea\.io\/gitea v1\.26\.0\b/m);
    const replaces = goMod.split("\n").filter((l) => l.startsWith("replace "));
    expect(replaces).toHaveLength(7);
    expect(replaces).toContain("replace github.com/nektos/act => gitea.com/gitea/act v0.261.10");
    expect(existsSync(join(dir, "go.sum"))).toBe(true);
  });

  it("builds as Gitea's Makefile does: CGO, the sqlite tags, SQLite's variable limit, the version in the binary", () => {
    expect(goModuleBuildArgs(build, "/out/gitea")).toEqual([
      "build",
      "-v",
      "-tags",
      "sqlite,sqlite_unlock_notify",
      "-ldflags",
      '-X "main.Version=1.26.0" -X "main.Tags=sqlite sqlite_unlock_notify"',
      "-o",
      "/out/gitea",
      "code.gitea.io/gitea",
    ]);
    expect(goModuleBuildEnv(build, { PATH: "/bin", CGO_ENABLED: "0", GOFLAGS: "-buildvcs=false" })).toEqual({
      PATH: "/bin",
      GOFLAGS: "-mod=mod",
      GOTOOLCHAIN: "local",
      CGO_ENABLED: "1",
      CGO_CFLAGS: "-O2 -g -DSQLITE_MAX_VARIABLE_NUMBER=32766",
    });
  });

  it("copies templates/, options/ and public/ of the same Gitea next to the binary", () => {
    expect(build.files).toEqual({ module: "code.gitea.io/gitea@v1.26.0", paths: ["templates", "options", "public"] });
    expect(GITEA.version).toMatch(/^v1\.26\.0-conveyor\.\d+$/);
    expect(cachedToolPath("/c", GITEA)).toBe("/c/bin/gitea-v1.26.0-conveyor.1/gitea");
  });

  it("asks for the Go its go.mod requires, and is named by GITEA_BIN", () => {
    expect(GITEA.minGo).toBe(/^go (\S+)$/m.exec(goMod)?.[1]);
    expect(GITEA.envVar).toBe("GITEA_BIN");
  });
});

describe("goModuleBuildArgs and goModuleBuildEnv", () => {
  it("add no tags or ldflags a build does not name, and keep the caller's environment under the build's", () => {
    const plain = { kind: "go-module", dir: "x", pkg: "example.com/x" } as const;
    expect(goModuleBuildArgs(plain, "/o/x")).toEqual(["build", "-v", "-o", "/o/x", "example.com/x"]);
    expect(goModuleBuildArgs({ ...plain, tags: [], ldflags: [] }, "/o/x")).toEqual(goModuleBuildArgs(plain, "/o/x"));
    expect(goModuleBuildEnv(plain, { GOTOOLCHAIN: "auto", HOME: "/h" })).toEqual({
      HOME: "/h",
      GOFLAGS: "-mod=mod",
      GOTOOLCHAIN: "local",
    });
  });
});

describe("build progress", () => {
  it("says how long the build has taken, how many packages are compiled, and how long it takes in all", () => {
    expect(buildProgressLine(GITEA, 45_000, 0)).toBe(
      "still building gitea v1.26.0-conveyor.1: 45 s so far (about 6 min in all)…",
    );
    expect(buildProgressLine(GITEA, 150_400, 812)).toBe(
      "still building gitea v1.26.0-conveyor.1: 2 min 30 s so far, 812 packages compiled (about 6 min in all)…",
    );
  });

  it("counts the package paths go build -v writes, not the log's headers, cgo's notes or errors", () => {
    const log = [
      "",
      "=== 2026-11-27T15:00:00.000Z go build -v -o /x code.gitea.io/gitea",
      "internal/goarch",
      "runtime",
      "github.com/mattn/go-sqlite3",
      "# github.com/mattn/go-sqlite3",
      "sqlite3-binding.c: In function 'sqlite3SelectNew':",
      "gopkg.in/yaml.v3",
      "code.gitea.io/gitea/modules/setting",
      "go: downloading github.com/x/y v1.0.0",
    ].join("\n");
    expect(countCompiledPackages(log)).toBe(5);
    expect(countCompiledPackages("")).toBe(0);
  });
});

describe("checkGo", () => {
  const root = mkdtempSync(join(tmpdir(), "fake-go-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  /** A PATH holding only a fake `go` that answers `go env GOVERSION` and `go env CC` as given. */
  const fakeGo = (version: string, cc: string) => {
    const bin = mkdtempSync(join(root, "bin-"));
    const script = `#!/bin/sh\nif [ "$2" = GOVERSION ]; then echo ${version}; else echo ${cc}; fi\n`;
    writeFileSync(join(bin, "go"), script);
    chmodSync(join(bin, "go"), 0o755);
    return bin;
  };

  it("refuses a cgo build without the C compiler Go names, saying what to install or set", () => {
    const env = { PATH: fakeGo("go1.26.8", "no-such-cc-here") };
    expect(() => checkGo(GITEA, env)).toThrow(ToolchainError);
    expect(() => checkGo(GITEA, env)).toThrow(/needs a C compiler \(no-such-cc-here\).*GITEA_BIN/);
  });

  it("accepts a cgo build whose C compiler is there, and does not ask for one without cgo", () => {
    const bin = fakeGo("go1.26.8", "sh");
    expect(() => checkGo(GITEA, { PATH: `${bin}:/bin:/usr/bin` })).not.toThrow();
    expect(() => checkGo(BUILDKITE_AGENT, { PATH: fakeGo("go1.26.8", "no-such-cc-here") })).not.toThrow();
  });

  it("refuses a Go older than the go.mod's", () => {
    expect(() => checkGo(GITEA, { PATH: `${fakeGo("go1.26.1", "sh")}:/bin` })).toThrow(/needs Go 1\.26\.2 or newer/);
  });
});
