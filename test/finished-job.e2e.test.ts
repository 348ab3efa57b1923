import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { type AgentWorld, agentCall, arrangeAgentWorld } from "./support/fuzz/agent-world.js";
import { api, stack } from "./support/stack-env.js";

// Finished means immutable (docs/security.md): once a job finished, no agent credential changes anything of it —
// not its job token (revoked), not the access token of the agent that ran it — and a finished artifact's bytes are
// never served changed, even when its upload form is posted again. Each write is tried after the finish, by raw
// agent API calls as buildkite-agent makes them, and the build must read back exactly as it did before.

// biome-ignore lint/suspicious/noExplicitAny: REST bodies are checked field by field.
type Json = any;

const sha1 = (bytes: Uint8Array) => createHash("sha1").update(bytes).digest("hex");
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

let w: AgentWorld;
const buildPath = () => `/v2/organizations/${w.org.slug}/pipelines/${w.buildPipeline}/builds/${w.buildNumber}`;

/** A log chunk as the agent sends it: gzip body, the offset and size of its bytes in the log. */
function chunk(token: string, sequence: number, offset: number, text: string) {
  const bytes = Buffer.from(text);
  return fetch(
    `${stack.agentUrl.replace(/\/v3\/?$/, "")}/v3/jobs/${w.jobId}/chunks?sequence=${sequence}&offset=${offset}&size=${bytes.length}`,
    {
      method: "POST",
      headers: { authorization: `Token ${token}`, "content-type": "text/plain", "content-encoding": "gzip" },
      body: gzipSync(bytes),
    },
  );
}

/** Posts an artifact's bytes with the signed S3 form the agent API answered, as the agent's form uploader does. */
async function postForm(instructions: Json, bytes: Uint8Array, contentType: string) {
  const form = new FormData();
  for (const [k, v] of Object.entries(instructions.data as Record<string, string>)) form.append(k, v);
  form.append(instructions.action.file_input, new Blob([bytes], { type: contentType }), "file");
  const res = await fetch(instructions.action.url, { method: "POST", body: form });
  await res.arrayBuffer();
  return res.status;
}

/** What the REST API shows of the build: its state, meta-data, annotations, the job's log and its artifacts. */
async function shown() {
  const [build, annotations, log, artifacts] = await Promise.all([
    api(buildPath(), w.org.secret),
    api(`${buildPath()}/annotations`, w.org.secret),
    api(`${buildPath()}/jobs/${w.jobId}/log`, w.org.secret),
    api(`${buildPath()}/artifacts`, w.org.secret),
  ]);
  const job = build.body.jobs.find((j: Json) => j.id === w.jobId);
  return {
    state: build.body.state,
    jobState: job.state,
    metaData: build.body.meta_data,
    annotations: annotations.body.map((a: Json) => [a.context, a.style, a.body_html]),
    log: { content: log.body.content, size: log.body.size, headerTimes: log.body.header_times },
    artifacts: artifacts.body.map((a: Json) => [a.id, a.state, a.sha1sum, a.file_size]),
  };
}

const ARTIFACT = new TextEncoder().encode("the artifact as the job uploaded it\n");
/** Other bytes of the same size: the form pins the size, not the bytes. */
const FORGED = new TextEncoder().encode("THE ARTIFACT AS AN ATTACKER POSTED IT\n".slice(0, ARTIFACT.length));
let upload: { id: string; instructions: Json; batch: Json };

beforeAll(async () => {
  w = await arrangeAgentWorld();
  expect((await agentCall("PUT", `/v3/jobs/${w.jobId}/start`, w.jobSecret, {})).status).toBe(200);
  // While it runs, the job writes each kind of thing once: every write is allowed.
  expect((await chunk(w.jobSecret, 1, 0, "--- building\nok\n")).status).toBe(201);
  expect(
    (
      await agentCall("POST", `/v3/jobs/${w.jobId}/header_times`, w.jobSecret, {
        header_times: { "0": "2026-11-27T10:00:00Z" },
      })
    ).status,
  ).toBe(200);
  expect((await agentCall("POST", `/v3/jobs/${w.jobId}/data/set`, w.jobSecret, { key: "k", value: "v" })).status).toBe(
    200,
  );
  expect(
    (await agentCall("POST", `/v3/jobs/${w.jobId}/annotations`, w.jobSecret, { body: "before", context: "c" })).status,
  ).toBe(200);
  const batch = {
    id: crypto.randomUUID(),
    artifacts: [
      { path: "out/a.txt", file_size: ARTIFACT.length, sha1sum: sha1(ARTIFACT), sha256sum: sha256(ARTIFACT) },
    ],
  };
  const created = await agentCall("POST", `/v3/jobs/${w.jobId}/artifacts`, w.jobSecret, batch);
  expect(created.status).toBe(201);
  const body = created.body as Json;
  const id = String(body.artifact_ids[0]);
  const instructions = body.per_artifact_instructions[id];
  upload = { id, instructions, batch };
  expect(await postForm(instructions, ARTIFACT, "text/plain")).toBeLessThan(300);
  expect(
    (await agentCall("PUT", `/v3/jobs/${w.jobId}/artifacts`, w.jobSecret, { artifacts: [{ id, state: "finished" }] }))
      .status,
  ).toBe(200);
  expect(
    (
      await agentCall("PUT", `/v3/jobs/${w.jobId}/finish`, w.jobSecret, {
        exit_status: "1",
        finished_at: new Date().toISOString(),
      })
    ).status,
  ).toBe(200);
}, 60_000);

it("refuses every write to a finished job with the agent's own access token, and changes nothing", async () => {
  const before = await shown();
  expect(before).toMatchObject({ jobState: "failed", metaData: { k: "v" } });
  expect(before.log.content).toBe("--- building\nok\n");
  expect(before.artifacts).toEqual([[upload.id, "finished", sha1(ARTIFACT), ARTIFACT.length]]);
  // The job token was revoked when the job finished; the agent's access token still authenticates the agent.
  for (const token of [w.agentSecret, w.jobSecret]) {
    const answers = {
      chunk: (await chunk(token, 2, 16, "after the finish\n")).status,
      headerTimes: (
        await agentCall("POST", `/v3/jobs/${w.jobId}/header_times`, token, {
          header_times: { "1": "2026-11-27T11:00:00Z" },
        })
      ).status,
      set: (await agentCall("POST", `/v3/jobs/${w.jobId}/data/set`, token, { key: "k", value: "changed" })).status,
      setBatch: (
        await agentCall("POST", `/v3/jobs/${w.jobId}/data/set-batch`, token, { items: [{ key: "new", value: "x" }] })
      ).status,
      annotate: (await agentCall("POST", `/v3/jobs/${w.jobId}/annotations`, token, { body: "after", context: "c" }))
        .status,
      annotateNew: (await agentCall("POST", `/v3/jobs/${w.jobId}/annotations`, token, { body: "x", context: "n" }))
        .status,
      removeAnnotation: (await agentCall("DELETE", `/v3/jobs/${w.jobId}/annotations/c`, token)).status,
      announce: (await agentCall("POST", `/v3/jobs/${w.jobId}/artifacts`, token, upload.batch)).status,
      artifactState: (
        await agentCall("PUT", `/v3/jobs/${w.jobId}/artifacts`, token, {
          artifacts: [{ id: upload.id, state: "error" }],
        })
      ).status,
      timeout: (await agentCall("PUT", `/v3/jobs/${w.jobId}`, token, { timeout_in_minutes: "5" })).status,
    };
    for (const [what, status] of Object.entries(answers)) {
      // 401: a revoked job token; 404: a job the agent no longer holds; 422: the job is finished.
      expect([what, [401, 404, 422].includes(status)]).toEqual([what, true]);
    }
  }
  expect(await shown()).toEqual(before);
});

it("never serves other bytes for a finished artifact when its upload form is posted again", async () => {
  const path = `${buildPath()}/jobs/${w.jobId}/artifacts/${upload.id}/download`;
  const first = await api(path, w.org.secret, { redirect: "manual" });
  expect(first.status).toBe(302);
  const served = new Uint8Array(await (await fetch(first.body.url)).arrayBuffer());
  expect(sha1(served)).toBe(sha1(ARTIFACT));
  // The form stays valid until it expires: posting it again (as the agent, the job or anyone who saw it could) is
  // taken by the store, which checks only the signature, the key and the size. It must not change what is served.
  expect(FORGED.length).toBe(ARTIFACT.length);
  expect(sha1(FORGED)).not.toBe(sha1(ARTIFACT));
  expect(await postForm(upload.instructions, FORGED, "text/plain")).toBeLessThan(300);
  const after = await api(path, w.org.secret, { redirect: "manual" });
  expect([after.status, after.body.message]).toEqual([
    422,
    "The artifact's stored object was changed after its upload finished: it is not served",
  ]);
  // The record is as it was.
  const record = await api(`${buildPath()}/jobs/${w.jobId}/artifacts/${upload.id}`, w.org.secret);
  expect(record.body).toMatchObject({ state: "finished", sha1sum: sha1(ARTIFACT), file_size: ARTIFACT.length });
});
