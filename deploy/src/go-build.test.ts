import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FERRETDB_PATCHES_DIR } from "./go-build.js";
import { FERRETDB } from "./tools.js";

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

  it("mark the cached binary with a patch level, so a changed patch is rebuilt", () => {
    expect(FERRETDB.version).toMatch(/^v1\.24\.2-conveyor\.\d+$/);
  });
});
