import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentialsKey } from "./credentials-key.js";

describe("credentialsKey", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "conveyor-key-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("makes a key of 32 bytes once, readable by its owner only, and keeps it", () => {
    const file = join(dir, "credentials-encryption.key");
    const first = credentialsKey(file, undefined);
    expect(Buffer.from(first, "base64")).toHaveLength(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(credentialsKey(file, undefined)).toBe(first);
    expect(readFileSync(file, "utf8").trim()).toBe(first);
  });

  it("takes the environment's key over the file's, and writes nothing then", () => {
    const file = join(dir, "credentials-encryption.key");
    expect(credentialsKey(file, " from-env ")).toBe("from-env");
    expect(() => statSync(file)).toThrow();
    writeFileSync(file, "kept\n");
    expect(credentialsKey(file, "")).toBe("kept");
  });
});
