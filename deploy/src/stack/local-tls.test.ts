import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureLocalTls } from "./local-tls.js";

describe("ensureLocalTls", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "local-tls-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("makes a CA and a localhost certificate it signed, once, and a trust file holding the CA", () => {
    const tls = ensureLocalTls(join(dir, "tls"));
    if (!tls) throw new Error("openssl is needed (the stack's TLS is made with it)");
    const verify = execFileSync("openssl", ["verify", "-CAfile", tls.caFile, tls.certFile], { encoding: "utf8" });
    expect(verify).toContain("OK");
    const text = execFileSync("openssl", ["x509", "-in", tls.certFile, "-noout", "-text"], { encoding: "utf8" });
    expect(text).toMatch(/DNS:localhost/);
    expect(text).toMatch(/IP Address:127\.0\.0\.1/);
    expect(readFileSync(tls.trustFile, "utf8").startsWith(readFileSync(tls.caFile, "utf8"))).toBe(true);
    const madeAt = statSync(tls.certFile).mtimeMs;
    const again = ensureLocalTls(join(dir, "tls"));
    expect(again).toEqual(tls);
    expect(statSync(tls.certFile).mtimeMs).toBe(madeAt);
  });
});
