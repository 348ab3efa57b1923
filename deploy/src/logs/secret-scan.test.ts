import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { redact, scanForSecrets, secretsInLine } from "./secret-scan.js";

const hex40 = "0123456789abcdef0123456789abcdef01234567";

describe("secretsInLine", () => {
  it("finds a signed JWT (an OIDC token) and a private JSON Web Key, not a detached signature", () => {
    const jwt = `eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJvcmdhbml6YXRpb246YWNtZSJ9.${"s".repeat(40)}`;
    expect(secretsInLine(`{"msg":"token ${jwt}"}`, [])).toEqual([jwt]);
    expect(secretsInLine(`{"signature":{"value":"eyJhbGciOiJFZERTQSJ9..${"s".repeat(40)}"}}`, [])).toEqual([]);
    const d = "A".repeat(43);
    expect(secretsInLine(`{"kty":"OKP","d":"${d}","x":"y"}`, [])).toHaveLength(1);
    expect(secretsInLine(`"{\\"kty\\":\\"RSA\\",\\"d\\":\\"${d}\\"}"`, [])).toHaveLength(1);
    expect(secretsInLine(`{"kty":"OKP","x":"${d}"}`, [])).toEqual([]);
  });

  it.each(["bkua_", "bkat_", "bkaa_", "bkaj_", "bkpt_", "cvs_", "cvl_", "cvsv_"])(
    "finds an issued %s secret wherever it is in a line",
    (prefix) => {
      expect(secretsInLine(`{"msg":"x","authorization":"Bearer ${prefix}${hex40}"}`, [])).toEqual([
        `${prefix}${hex40}`,
      ]);
    },
  );

  it("ignores look-alikes: other prefixes, short or non-hex tails, hashes", () => {
    expect(secretsInLine(`bkxx_${hex40} bkua_${hex40.slice(1)} bkua_${"g".repeat(40)} ${hex40}${hex40}`, [])).toEqual(
      [],
    );
  });

  it("finds known secrets by value, ignoring values too short to be telling", () => {
    expect(secretsInLine("key=S3cr3tKeyValue and abc", ["S3cr3tKeyValue", "abc"])).toEqual(["S3cr3tKeyValue"]);
  });

  it("redacts to a prefix and a length", () => {
    expect(redact(`bkua_${hex40}`)).toBe("bkua_01…(45)");
  });
});

describe("scanForSecrets", () => {
  it("scans every log file of a directory tree, naming file and line of each finding", async () => {
    const dir = mkdtempSync(join(tmpdir(), "secret-scan-"));
    try {
      mkdirSync(join(dir, "agents"));
      writeFileSync(join(dir, "gateway.log"), `{"msg":"request"}\n{"msg":"token bkaj_${hex40}"}\n`);
      writeFileSync(join(dir, "agents", "agent-1.log"), "clean\nS3 secret is hunter2hunter2\n");
      writeFileSync(join(dir, "agents", "job-env"), `BUILDKITE_AGENT_ACCESS_TOKEN=bkaj_${hex40}\n`);
      const result = await scanForSecrets(dir, ["hunter2hunter2"]);
      expect(result.files).toBe(2);
      expect(result.findings).toEqual(
        expect.arrayContaining([
          { file: join(dir, "gateway.log"), line: 2, redacted: "bkaj_01…(45)" },
          { file: join(dir, "agents", "agent-1.log"), line: 2, redacted: "hunter2…(14)" },
        ]),
      );
      expect(result.findings).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
