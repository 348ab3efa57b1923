import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import { ArtifactsService } from "@conveyor/proto/artifacts";
import { createLogger, newId } from "@conveyor/runtime";
import { MongoClient } from "mongodb";
import type { ArtifactsContext } from "../services/artifacts/src/artifacts-context.js";
import { createArtifactsService } from "../services/artifacts/src/artifacts-service.js";
import type { S3Config } from "../services/artifacts/src/config.js";
import { createS3ObjectStore } from "../services/artifacts/src/object-store/object-store.js";
import { createMongoArtifactRepository } from "../services/artifacts/src/store/artifact-repository.js";
import { createSweeper } from "../services/artifacts/src/sweep/sweeper.js";
import { startMinio, stopSide } from "./support/artifacts-side.js";

// The artifacts service over the real MongoDB-wire server and the real object stores (the stack's versitygw, and a
// MinIO beside it): durable idempotent batches, the quota's conditional upsert, form uploads the stores accept only
// as signed (exact size, before expiry), states checked against the stored objects, and the sweep expiring and
// removing objects.

jest.setTimeout(120_000);
const DAY = 24 * 3600 * 1000;
let mongo: MongoClient;
let minioEndpoint: string;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
  minioEndpoint = await startMinio();
}, 1_500_000);
afterAll(async () => {
  await mongo.close();
  await stopSide();
});

function s3(endpoint: string): S3Config {
  return {
    endpoint,
    accessKey: process.env.S3_ACCESS_KEY ?? "conveyor",
    secretKey: process.env.S3_SECRET_KEY ?? "conveyor-secret",
    bucket: `it-artifacts-${Date.now().toString(36)}`,
    region: process.env.S3_REGION ?? "us-east-1",
  };
}

async function world(endpoint: string, config: Partial<ArtifactsContext["config"]> = {}) {
  const db = mongo.db(`it_artifacts_${Date.now()}_${Math.floor(Math.random() * 1e6)}`);
  const store = createS3ObjectStore(s3(endpoint));
  await store.ensureBucket();
  const clock = { now: new Date() };
  const ctx: ArtifactsContext = {
    repo: await createMongoArtifactRepository(db),
    store,
    config: {
      defaultRetentionDays: 30,
      maxArtifactsPerJob: 4,
      maxArtifactsPerBuild: 6,
      uploadTtlS: 600,
      abandonAfterS: 3600,
      downloadTtlS: 60,
      sweepIntervalMs: 60_000,
      sweepBatch: 2,
      ...config,
    },
    now: () => clock.now,
    logger: createLogger("test", "silent"),
  };
  const client = createClient(
    ArtifactsService,
    createRouterTransport((r) => r.service(ArtifactsService, createArtifactsService(ctx))),
  );
  const job = { organizationId: newId(), pipelineId: newId(), buildId: newId(), buildNumber: 1, jobId: newId() };
  return { client, clock, job, sweeper: createSweeper(ctx), store, db };
}

const upload = (path: string, content: string) => ({
  path,
  fileSize: BigInt(Buffer.byteLength(content)),
  sha1sum: "0".repeat(40),
  sha256sum: "",
  contentType: "text/plain",
  globPath: "",
});

/** POSTs a form as the agent does (fields, then the file last); returns the store's status. */
async function post(form: { url: string; fields: Record<string, string>; fileField: string }, content: string) {
  const body = new FormData();
  for (const [k, v] of Object.entries(form.fields)) body.append(k, v);
  body.append(form.fileField, new Blob([content]), "日本語 file.txt");
  return (await fetch(form.url, { method: "POST", body })).status;
}

describe.each([
  ["versitygw", () => process.env.S3_ENDPOINT ?? ""],
  ["MinIO", () => minioEndpoint],
])("the artifacts service on %s and the MongoDB-wire server", (_name, endpoint) => {
  it("creates its bucket once when several replicas start together", async () => {
    // Every replica finds no bucket and creates it; the losers are told it exists, which must not stop their start.
    const config = s3(endpoint());
    const stores = Array.from({ length: 4 }, () => createS3ObjectStore(config));
    await Promise.all(stores.map((store) => store.ensureBucket()));
    await stores[0]?.ensureBucket();
    const form = await stores[1]?.signUpload(
      { key: "race/one.txt", size: 3, contentType: "text/plain", expiresAt: new Date(Date.now() + 60_000) },
      "",
    );
    expect(form && (await post(form, "abc"))).toBe(204);
  });

  it("stores batches idempotently, takes only the signed upload, and finishes what the store holds", async () => {
    const w = await world(endpoint());
    const batchId = newId();
    const req = { ...w.job, batchId, artifacts: [upload("a/empty.txt", ""), upload("a/ünï.txt", "hello")] };
    const created = await w.client.createArtifactBatch(req);
    const again = await w.client.createArtifactBatch(req);
    expect(again.artifacts.map((a) => a.id)).toEqual(created.artifacts.map((a) => a.id));
    const [empty, hello] = created.uploads;
    expect(await post(hello as never, "hell")).toBe(400);
    expect(await post(hello as never, "hello!")).toBe(400);
    const form = hello as NonNullable<typeof hello>;
    expect(await post({ ...form, fields: { ...form.fields, key: "other/key" } }, "hello")).toBe(403);
    expect(await post(hello as never, "hello")).toBe(204);
    expect(await post(empty as never, "")).toBe(204);
    const states = await w.client.updateArtifactStates({
      jobId: w.job.jobId,
      updates: created.artifacts.map((a) => ({ id: a.id, state: "finished" })),
    });
    expect(states.artifacts.map((a) => a.state)).toEqual(["finished", "finished"]);
    const signed = await w.client.signArtifactDownload({ ...w.job, id: created.artifacts[1]?.id ?? "" });
    const res = await fetch(signed.url);
    expect([res.status, await res.text()]).toEqual([200, "hello"]);

    // The quota (4 per job) counted the batch once: two more fit, three do not.
    const over = await w.client
      .createArtifactBatch({ ...w.job, batchId: newId(), artifacts: ["x", "y", "z"].map((p) => upload(p, "x")) })
      .catch((err: { code: Code }) => err.code);
    expect(over).toBe(Code.PermissionDenied);
    await w.client.createArtifactBatch({
      ...w.job,
      batchId: newId(),
      artifacts: ["x", "y"].map((p) => upload(p, "x")),
    });

    // An upload whose form expired is refused by the store.
    w.clock.now = new Date(Date.now() - 700_000);
    const stale = await w.client.createArtifactBatch({
      ...w.job,
      jobId: newId(),
      batchId: newId(),
      artifacts: [upload("s", "x")],
    });
    expect(await post(stale.uploads[0] as never, "x")).toBe(403);

    // The build's bound (6) over all its jobs: it holds 5; a third job's two would pass it, and are refused without
    // using that job's own quota, so its one more fits.
    const third = { ...w.job, jobId: newId() };
    const pastBuild = await w.client
      .createArtifactBatch({ ...third, batchId: newId(), artifacts: ["p", "q"].map((p) => upload(p, "x")) })
      .catch((err: { code: Code }) => err.code);
    expect(pastBuild).toBe(Code.PermissionDenied);
    await w.client.createArtifactBatch({ ...third, batchId: newId(), artifacts: [upload("p", "x")] });
  });

  it("expires and deletes artifacts, removing their objects in bounded, repeatable sweeps", async () => {
    const w = await world(endpoint(), { defaultRetentionDays: 1 });
    const created = await w.client.createArtifactBatch({
      ...w.job,
      batchId: newId(),
      artifacts: ["a", "b", "c"].map((p) => upload(p, p)),
    });
    for (const [i, form] of created.uploads.entries()) expect(await post(form, "abc"[i] as string)).toBe(204);
    await w.client.updateArtifactStates({
      jobId: w.job.jobId,
      updates: created.artifacts.map((a) => ({ id: a.id, state: "finished" })),
    });
    const [a, b] = created.artifacts;
    const keys = created.uploads.map((u) => u.fields.key as string);
    await w.client.deleteArtifact({ ...w.job, id: a?.id ?? "" });
    expect(await w.store.stat(keys[0] as string)).toBeUndefined();
    expect((await w.client.listArtifacts({ buildId: w.job.buildId })).totalCount).toBe(2);
    w.clock.now = new Date(Date.now() + 2 * DAY);
    expect(await w.sweeper.sweep()).toEqual({ abandoned: 0, expired: 2, removed: 2 });
    for (const key of keys) expect(await w.store.stat(key)).toBeUndefined();
    const got = await w.client.getArtifact({ ...w.job, id: b?.id ?? "" });
    expect(got.artifact?.state).toBe("expired");
    expect(await w.sweeper.sweep()).toEqual({ abandoned: 0, expired: 0, removed: 0 });
  });
});
