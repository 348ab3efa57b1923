import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The files of the stack's local TLS: a CA made once, the gateway's certificate signed by it, and a trust bundle. */
export interface LocalTls {
  /** The local CA's certificate (trust it to reach the gateway's TLS port). */
  caFile: string;
  certFile: string;
  keyFile: string;
  /**
   * What local agents get as SSL_CERT_FILE: the local CA with the system's roots, so that jobs still reach the
   * internet's HTTPS (Go reads only this file when it is set).
   */
  trustFile: string;
}

/** The system's CA bundles, by distribution; the first that exists joins the trust bundle. */
const SYSTEM_BUNDLES = [
  "/etc/ssl/certs/ca-certificates.crt",
  "/etc/pki/tls/certs/ca-bundle.crt",
  "/etc/ssl/ca-bundle.pem",
  "/etc/ssl/cert.pem",
];

/** The names the gateway's certificate is valid for: how local agents and people reach it. */
const GATEWAY_NAMES = "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1";

const openssl = (args: string[]) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });

/**
 * The stack's TLS files under `dir` (`.data/tls`), made on first use with the `openssl` command: an ECDSA P-256 CA
 * valid ten years and a gateway certificate for localhost valid 825 days, both kept (agents keep trusting the CA
 * across restarts); a certificate within 30 days of its end is made again. Undefined when openssl is missing: the
 * stack then serves plain HTTP only and its agents poll.
 */
export function ensureLocalTls(dir: string, log: (line: string) => void = () => {}): LocalTls | undefined {
  const files: LocalTls = {
    caFile: join(dir, "ca.pem"),
    certFile: join(dir, "gateway.pem"),
    keyFile: join(dir, "gateway-key.pem"),
    trustFile: join(dir, "trust.pem"),
  };
  const caKey = join(dir, "ca-key.pem");
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    if (!existsSync(files.caFile) || !existsSync(caKey) || !validFor30Days(files.caFile)) {
      openssl(
        ["req", "-x509", ...ec, "-days", "3650", "-keyout", caKey, "-out", files.caFile]
          .concat(["-subj", "/CN=Conveyor local CA", "-addext", "basicConstraints=critical,CA:TRUE"])
          .concat(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]),
      );
      rmSync(files.certFile, { force: true });
      log(`made a local CA for the gateway's TLS: ${files.caFile}`);
    }
    if (!existsSync(files.certFile) || !existsSync(files.keyFile) || !validFor30Days(files.certFile)) {
      const csr = join(dir, "gateway.csr");
      const ext = join(dir, "gateway.ext");
      writeFileSync(ext, `${GATEWAY_NAMES}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
      openssl(["req", ...ec, "-keyout", files.keyFile, "-out", csr, "-subj", "/CN=localhost"]);
      openssl(
        ["x509", "-req", "-in", csr, "-CA", files.caFile, "-CAkey", caKey, "-CAcreateserial"].concat([
          "-days",
          "825",
          "-out",
          files.certFile,
          "-extfile",
          ext,
        ]),
      );
      rmSync(csr, { force: true });
    }
    const system = SYSTEM_BUNDLES.find((f) => existsSync(f));
    const ca = readFileSync(files.caFile, "utf8");
    writeFileSync(files.trustFile, system ? `${ca}\n${readFileSync(system, "utf8")}` : ca);
    return files;
  } catch (err) {
    log(`no TLS for the gateway (the openssl command failed: ${(err as Error).message.split("\n")[0]}); agents poll`);
    return undefined;
  }
}

/** Whether a certificate is still valid 30 days from now. */
function validFor30Days(certFile: string): boolean {
  try {
    openssl(["x509", "-checkend", String(30 * 24 * 3600), "-noout", "-in", certFile]);
    return true;
  } catch {
    return false;
  }
}
