import { createHash } from "node:crypto";
import { request } from "node:http";
import { gzipSync } from "node:zlib";
import { type AgentWorld, agentCall, arrangeAgentWorld } from "./support/fuzz/agent-world.js";
import { api, stack } from "./support/stack-env.js";

// A large log is read whole however slowly its client reads it (docs/limits.md, "a streamed answer"): the gateway's
// stream from the builds service has no deadline, only an idle timeout (RPC_TIMEOUT_MS, 10 s in the test stack), so
// a read that takes longer than that deadline still gets every byte, and the JSON form is whole JSON.

const MIB = 1024 * 1024;
const CHUNKS = 24;

let w: AgentWorld;
let logPath: string;
const expected = createHash("sha256");
let size = 0;

/** One MiB of log lines, different in every chunk. */
function piece(n: number): Buffer {
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < MIB; i++) {
    const line = `chunk ${n} line ${i} \u001b[32mgreen\u001b[0m ${"x".repeat(40)}\n`;
    lines.push(line);
    length += line.length;
  }
  return Buffer.from(lines.join("")).subarray(0, MIB);
}

/** Reads a URL with a pause after every `bytesPerPause` bytes; resolves with the status, the bytes' hash and size. */
function slowRead(url: string, token: string, bytesPerPause: number, pauseMs: number) {
  return new Promise<{ status: number; sha256: string; bytes: number; ms: number }>((resolve, reject) => {
    const started = Date.now();
    const req = request(url, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      const hash = createHash("sha256");
      let bytes = 0;
      let sincePause = 0;
      res.on("data", (data: Buffer) => {
        hash.update(data);
        bytes += data.length;
        sincePause += data.length;
        if (sincePause >= bytesPerPause) {
          sincePause = 0;
          res.pause();
          setTimeout(() => res.resume(), pauseMs);
        }
      });
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, sha256: hash.digest("hex"), bytes, ms: Date.now() - started }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

beforeAll(async () => {
  w = await arrangeAgentWorld();
  expect((await agentCall("PUT", `/v3/jobs/${w.jobId}/start`, w.jobSecret, {})).status).toBe(200);
  const base = stack.agentUrl.replace(/\/v3\/?$/, "");
  for (let n = 0; n < CHUNKS; n++) {
    const bytes = piece(n);
    const res = await fetch(`${base}/v3/jobs/${w.jobId}/chunks?sequence=${n + 1}&offset=${size}&size=${bytes.length}`, {
      method: "POST",
      headers: { authorization: `Token ${w.jobSecret}`, "content-type": "text/plain", "content-encoding": "gzip" },
      body: gzipSync(bytes),
    });
    expect(res.status).toBe(201);
    expected.update(bytes);
    size += bytes.length;
  }
  logPath = `/v2/organizations/${w.org.slug}/pipelines/${w.buildPipeline}/builds/${w.buildNumber}/jobs/${w.jobId}/log`;
}, 120_000);

it("serves a 24 MiB log.txt whole to a client that takes longer than the RPC deadline to read it", async () => {
  // About 2 MiB a second: 12 s or more, past the 10 s a unary call may take.
  const read = await slowRead(`${stack.apiUrl}${logPath}.txt`, w.org.secret, 256 * 1024, 125);
  expect(read.status).toBe(200);
  expect(read.bytes).toBe(size);
  expect(read.sha256).toBe(expected.copy().digest("hex"));
  expect(read.ms).toBeGreaterThan(10_000);
}, 60_000);

it("serves the JSON form of the same log as whole JSON with every byte", async () => {
  const res = await api(logPath, w.org.secret);
  expect(res.status).toBe(200);
  expect(res.body.size).toBe(size);
  expect(Buffer.byteLength(res.body.content)).toBe(size);
  expect(createHash("sha256").update(res.body.content).digest("hex")).toBe(expected.copy().digest("hex"));
}, 60_000);
