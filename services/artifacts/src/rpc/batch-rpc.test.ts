import { Code } from "@connectrpc/connect";
import { fieldErrorsOf, newId } from "@conveyor/runtime";
import { artifactsWorld, failure, upload } from "../test-support.js";

describe("artifact batches", () => {
  it("creates new records in request order, each with its own upload form pinned to its key and size", async () => {
    const w = artifactsWorld();
    const batchId = newId();
    const res = await w.client.createArtifactBatch({
      ...w.job,
      batchId,
      urlBase: "http://gw.test/objects",
      artifacts: [
        upload("dist/a.txt", 0),
        upload("dist/ünï/日本.bin", 1024, { contentType: "text/plain" }),
        upload("b.log", 10),
      ],
    });
    expect(res.artifacts.map((a) => [a.path, a.state, Number(a.fileSize), a.mimeType])).toEqual([
      ["dist/a.txt", "new", 0, "application/octet-stream"],
      ["dist/ünï/日本.bin", "new", 1024, "text/plain"],
      ["b.log", "new", 10, "application/octet-stream"],
    ]);
    expect(res.uploads.map((u) => u.artifactId)).toEqual(res.artifacts.map((a) => a.id));
    const first = res.uploads[0];
    expect(first?.url).toBe("http://gw.test/objects/test-bucket");
    expect(first?.fields.key).toMatch(
      new RegExp(`^artifacts/${w.job.buildId}/${w.job.jobId}/${res.artifacts[0]?.id}/[0-9a-f]{32}$`),
    );
    expect(first?.fields.key).toBe(w.memory.docs.get(res.artifacts[0]?.id ?? "")?.objectKey);
    expect(res.uploads[1]?.fields.policy).toMatch(/^size=1024;expires=2026-03-01T01:00:00.000Z$/);
    expect(res.artifacts[0]).toMatchObject({ ...w.job, buildNumber: 7 });
  });

  it("is idempotent on the batch id: a repeat answers the same records, and counts once against the quota", async () => {
    const w = artifactsWorld({ maxArtifactsPerJob: 3 });
    const batchId = newId();
    const req = { ...w.job, batchId, artifacts: [upload("a"), upload("b")] };
    const one = await w.client.createArtifactBatch(req);
    const two = await w.client.createArtifactBatch(req);
    expect(two.artifacts.map((a) => a.id)).toEqual(one.artifacts.map((a) => a.id));
    expect(two.uploads.map((u) => u.fields.key)).toEqual(one.uploads.map((u) => u.fields.key));
    expect(w.memory.docs.size).toBe(2);
    // The same batch id in another job names other records.
    const other = await w.client.createArtifactBatch({ ...req, jobId: newId() });
    expect(other.artifacts[0]?.id).not.toBe(one.artifacts[0]?.id);
    // One more fits the quota of 3, two more do not: 403 as Buildkite's quota.
    const over = await failure(
      w.client.createArtifactBatch({ ...w.job, batchId: newId(), artifacts: [upload("c"), upload("d")] }),
    );
    expect(over.code).toBe(Code.PermissionDenied);
    expect(over.rawMessage).toMatch(/at most 3 artifacts/);
    await w.client.createArtifactBatch({ ...w.job, batchId: newId(), artifacts: [upload("c")] });
  });

  it("bounds a build's artifacts over all its jobs, and a batch the build refuses takes nothing of its job's quota", async () => {
    const w = artifactsWorld({ maxArtifactsPerJob: 3, maxArtifactsPerBuild: 4 });
    await w.client.createArtifactBatch({ ...w.job, batchId: newId(), artifacts: [upload("a"), upload("b")] });
    const second = { ...w.job, jobId: newId() };
    await w.client.createArtifactBatch({ ...second, batchId: newId(), artifacts: [upload("c"), upload("d")] });
    // A third job's first artifact would be the build's fifth.
    const third = { ...w.job, jobId: newId() };
    const over = await failure(w.client.createArtifactBatch({ ...third, batchId: newId(), artifacts: [upload("e")] }));
    expect(over.code).toBe(Code.PermissionDenied);
    expect(over.rawMessage).toMatch(/jobs of a build may upload at most 4 artifacts/);
    expect(w.memory.docs.size).toBe(4);
    // Another build's jobs have their own count; the refused job's quota is whole (3 fit in another build's room).
    const elsewhere = { ...third, buildId: newId() };
    const res = await w.client.createArtifactBatch({
      ...elsewhere,
      batchId: newId(),
      artifacts: [upload("e"), upload("f"), upload("g")],
    });
    expect(res.artifacts).toHaveLength(3);
  });

  it("completes a batch whose first attempt stored only some records", async () => {
    const w = artifactsWorld();
    const batchId = newId();
    const req = { ...w.job, batchId, artifacts: [upload("a"), upload("b"), upload("c")] };
    const full = await w.client.createArtifactBatch(req);
    w.memory.docs.delete(full.artifacts[2]?.id ?? "");
    const again = await w.client.createArtifactBatch(req);
    expect(again.artifacts.map((a) => a.id)).toEqual(full.artifacts.map((a) => a.id));
    expect(w.memory.docs.size).toBe(3);
  });

  it("refuses bad paths, sizes and checksums with field errors, and too many artifacts", async () => {
    const w = artifactsWorld();
    const err = await failure(
      w.client.createArtifactBatch({
        ...w.job,
        batchId: newId(),
        artifacts: [
          upload("../etc/passwd"),
          upload("/abs/path"),
          upload("C:\\x"),
          upload("a/../../b"),
          upload("big", 5 * 1024 ** 3 + 1),
          upload("ok", 1, { sha1sum: "nothex" }),
          upload(""),
        ],
      }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(fieldErrorsOf(err as never)).toEqual([
      { field: "artifacts.0.path", code: "must not contain .." },
      { field: "artifacts.1.path", code: "must be relative" },
      { field: "artifacts.2.path", code: "must be relative" },
      { field: "artifacts.3.path", code: "must not contain .." },
      { field: "artifacts.4.file_size", code: "is larger than 5 GiB, the most an artifact may be" },
      { field: "artifacts.5.sha1sum", code: "must be 40 hexadecimal digits" },
      { field: "artifacts.6.path", code: "can't be blank" },
    ]);
    const many = await failure(
      w.client.createArtifactBatch({
        ...w.job,
        batchId: newId(),
        artifacts: Array.from({ length: 101 }, (_, i) => upload(`f${i}`)),
      }),
    );
    expect(fieldErrorsOf(many as never)[0]?.field).toBe("artifacts");
    expect(
      (await failure(w.client.createArtifactBatch({ ...w.job, batchId: "x", artifacts: [upload("a")] }))).code,
    ).toBe(Code.InvalidArgument);
    expect(w.memory.docs.size).toBe(0);
  });

  it("moves uploads to finished only when the object is there with the announced size, else to error", async () => {
    const w = artifactsWorld();
    const res = await w.client.createArtifactBatch({
      ...w.job,
      batchId: newId(),
      artifacts: [upload("ok", 3), upload("missing", 3), upload("short", 3), upload("failed", 3)],
    });
    const [ok, missing, short, failed] = res.artifacts;
    const key = (id: string | undefined) => w.memory.docs.get(id ?? "")?.objectKey ?? "";
    w.objects.objects.set(key(ok?.id), 3);
    w.objects.objects.set(key(short?.id), 2);
    w.objects.objects.set(key(failed?.id), 3);
    w.clock.now = new Date("2026-03-01T00:05:00.000Z");
    const after = await w.client.updateArtifactStates({
      jobId: w.job.jobId,
      updates: [
        { id: ok?.id ?? "", state: "finished" },
        { id: missing?.id ?? "", state: "finished" },
        { id: short?.id ?? "", state: "finished" },
        { id: failed?.id ?? "", state: "error" },
        { id: newId(), state: "finished" },
      ],
    });
    expect(after.artifacts.map((a) => [a.path, a.state])).toEqual([
      ["ok", "finished"],
      ["missing", "error"],
      ["short", "error"],
      ["failed", "error"],
    ]);
    expect(after.artifacts[0]?.uploadedAt).toBeDefined();
    // A finished artifact stays finished; another job cannot touch this job's artifacts.
    await w.client.updateArtifactStates({ jobId: newId(), updates: [{ id: ok?.id ?? "", state: "error" }] });
    await w.client.updateArtifactStates({ jobId: w.job.jobId, updates: [{ id: ok?.id ?? "", state: "error" }] });
    expect(w.memory.docs.get(ok?.id ?? "")?.state).toBe("finished");
    expect(
      (
        await failure(
          w.client.updateArtifactStates({ jobId: w.job.jobId, updates: [{ id: ok?.id ?? "", state: "x" }] }),
        )
      ).code,
    ).toBe(Code.InvalidArgument);
    // The failed uploads' objects are removed by the next sweep.
    await w.sweeper.sweep();
    expect([...w.objects.objects.keys()]).toEqual([key(ok?.id)]);
  });

  it("removes what an agent uploads for an artifact deleted meanwhile", async () => {
    const w = artifactsWorld();
    const res = await w.client.createArtifactBatch({ ...w.job, batchId: newId(), artifacts: [upload("a", 3)] });
    const id = res.artifacts[0]?.id ?? "";
    await w.client.deleteArtifact({ buildId: w.job.buildId, jobId: w.job.jobId, id });
    w.objects.objects.set(w.memory.docs.get(id)?.objectKey ?? "", 3);
    const after = await w.client.updateArtifactStates({ jobId: w.job.jobId, updates: [{ id, state: "finished" }] });
    expect(after.artifacts).toEqual([]);
    await w.sweeper.sweep();
    expect(w.objects.objects.size).toBe(0);
  });

  it("never signs a form for an artifact again once its upload finished or failed", async () => {
    const w = artifactsWorld();
    const req = { ...w.job, batchId: newId(), artifacts: [upload("a", 3), upload("b", 3)] };
    const res = await w.client.createArtifactBatch(req);
    const [a] = res.artifacts;
    w.objects.objects.set(w.memory.docs.get(a?.id ?? "")?.objectKey ?? "", 3);
    await w.client.updateArtifactStates({ jobId: w.job.jobId, updates: [{ id: a?.id ?? "", state: "finished" }] });
    const again = await failure(w.client.createArtifactBatch(req));
    expect([again.code, again.rawMessage]).toEqual([
      Code.FailedPrecondition,
      `Artifact 0 of batch ${req.batchId} is already finished: announce the upload as a new batch`,
    ]);
    // A new batch of the same paths makes new records, under keys no earlier form names.
    const fresh = await w.client.createArtifactBatch({ ...req, batchId: newId() });
    const keys = new Set(res.uploads.map((u) => u.fields.key));
    expect(fresh.uploads.filter((u) => keys.has(u.fields.key))).toEqual([]);
  });

  it("keeps the object's checksum when an upload finishes; a download refuses an object changed since", async () => {
    const w = artifactsWorld();
    const res = await w.client.createArtifactBatch({
      ...w.job,
      batchId: newId(),
      artifacts: [upload("same", 3), upload("changed", 3), upload("resized", 3), upload("gone", 3)],
    });
    const ids = res.artifacts.map((a) => a.id);
    const key = (id: string | undefined) => w.memory.docs.get(id ?? "")?.objectKey ?? "";
    for (const id of ids) {
      w.objects.objects.set(key(id), 3);
      w.objects.etags.set(key(id), `first-${id}`);
    }
    await w.client.updateArtifactStates({
      jobId: w.job.jobId,
      updates: ids.map((id) => ({ id, state: "finished" })),
    });
    expect(ids.map((id) => w.memory.docs.get(id)?.etag)).toEqual(ids.map((id) => `first-${id}`));
    const [same, changed, resized, gone] = ids;
    // The upload form is posted again after the artifact finished: other bytes, another checksum, or another size.
    w.objects.etags.set(key(changed), "second");
    w.objects.objects.set(key(resized), 4);
    w.objects.objects.delete(key(gone));
    const download = (id: string | undefined) =>
      w.client.signArtifactDownload({ buildId: w.job.buildId, jobId: w.job.jobId, id: id ?? "", urlBase: "" });
    expect((await download(same)).url).toContain(key(same));
    for (const [id, problem] of [
      [changed, "was changed after its upload finished"],
      [resized, "is 4 bytes where 3 were uploaded"],
      [gone, "is missing"],
    ] as const) {
      const refused = await failure(download(id));
      expect([refused.code, refused.rawMessage]).toEqual([
        Code.FailedPrecondition,
        `The artifact's stored object ${problem}: it is not served`,
      ]);
    }
    // The records are as they were: finished, with the checksum of what was uploaded.
    expect(ids.map((id) => w.memory.docs.get(id)?.state)).toEqual(ids.map(() => "finished"));
    expect(w.memory.docs.get(changed ?? "")?.etag).toBe(`first-${changed}`);
  });
});
