import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FERRETDB_PATCHES_DIR, goModuleDir, goVersionAtLeast, MIN_GO } from "./go-build.js";
import { BUILDKITE_AGENT, FERRETDB } from "./tools.js";

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
