import { Code } from "@connectrpc/connect";
import { newId } from "@conveyor/runtime";
import { artifactsWorld, failure, upload } from "../test-support.js";

/** A world with finished artifacts of two jobs of one build. */
async function populated() {
  const w = artifactsWorld();
  const jobB = newId();
  const create = async (jobId: string, paths: string[]) => {
    const res = await w.client.createArtifactBatch({
      ...w.job,
      jobId,
      batchId: newId(),
      artifacts: paths.map((p) => upload(p, 3)),
    });
    for (const a of res.artifacts) w.objects.objects.set(w.memory.docs.get(a.id)?.objectKey ?? "", 3);
    await w.client.updateArtifactStates({
      jobId,
      updates: res.artifacts.map((a) => ({ id: a.id, state: "finished" })),
    });
    return res.artifacts;
  };
  const a = await create(w.job.jobId, ["dist/app.js", "dist/sub/lib.js", "README.md"]);
  w.clock.now = new Date("2026-03-01T00:01:00.000Z");
  const b = await create(jobB, ["dist/app.js", "coverage/index.html"]);
  return { w, jobA: w.job.jobId, jobB, a, b };
}

describe("artifact reads", () => {
  it("searches by glob, newest per path, with signed URLs for the given base", async () => {
    const { w, jobA, jobB, b } = await populated();
    const search = (over: Record<string, unknown>) =>
      w.client.searchArtifacts({ buildId: w.job.buildId, urlBase: "http://gw.test/objects", ...over });
    const res = await search({ query: "dist/*" });
    expect(res.artifacts.map((s) => [s.artifact?.path, s.artifact?.jobId])).toEqual([["dist/app.js", jobB]]);
    expect(res.artifacts[0]?.artifact?.id).toBe(b[0]?.id);
    expect(res.artifacts[0]?.url).toMatch(/^http:\/\/gw\.test\/objects\/test-bucket\/artifacts\/.*X-Amz-Expires=60/);
    const all = await search({ query: "dist/**", includeDuplicates: true });
    expect(all.artifacts.map((s) => s.artifact?.path)).toEqual(["dist/app.js", "dist/sub/lib.js", "dist/app.js"]);
    expect((await search({ query: "" })).artifacts).toHaveLength(4);
    expect((await search({ query: "**/*.js", jobIds: [jobA] })).artifacts.map((s) => s.artifact?.path)).toEqual([
      "dist/app.js",
      "dist/sub/lib.js",
    ]);
    expect((await search({ query: "**/*.js", excludeJobIds: [jobB] })).artifacts).toHaveLength(2);
    expect((await search({ query: "*", jobIds: ["not-a-uuid"] })).artifacts).toEqual([]);
    expect((await search({ query: "*", state: "new" })).artifacts).toEqual([]);
    expect((await failure(search({ query: "x".repeat(513) }))).code).toBe(Code.InvalidArgument);
    expect((await failure(search({ query: "*", state: "bogus" }))).code).toBe(Code.InvalidArgument);
    expect((await w.client.searchArtifacts({ buildId: newId(), query: "*" })).artifacts).toEqual([]);
  });

  it("lists a build's or a job's artifacts a page at a time, gets one, and signs its download", async () => {
    const { w, jobA, a } = await populated();
    const list = await w.client.listArtifacts({ buildId: w.job.buildId, perPage: 2, page: 2 });
    expect(list.totalCount).toBe(5);
    expect(list.artifacts.map((x) => x.path)).toEqual(["README.md", "dist/app.js"]);
    expect((await w.client.listArtifacts({ buildId: w.job.buildId, jobId: jobA })).totalCount).toBe(3);
    expect((await w.client.listArtifacts({ buildId: w.job.buildId, state: "finished" })).totalCount).toBe(5);
    const id = a[0]?.id ?? "";
    const got = await w.client.getArtifact({ buildId: w.job.buildId, jobId: jobA, id });
    expect(got.artifact).toMatchObject({ id, path: "dist/app.js", state: "finished", sha1sum: "a".repeat(40) });
    expect((await failure(w.client.getArtifact({ buildId: w.job.buildId, jobId: newId(), id }))).rawMessage).toBe(
      "No artifact found",
    );
    expect((await failure(w.client.getArtifact({ buildId: newId(), jobId: jobA, id }))).code).toBe(Code.NotFound);
    const signed = await w.client.signArtifactDownload({ buildId: w.job.buildId, jobId: jobA, id, urlBase: "" });
    expect(signed.url).toMatch(/^http:\/\/store\.test\/test-bucket\//);
    expect(signed.expiresAt?.seconds).toBe(BigInt(Date.parse("2026-03-01T00:02:00.000Z") / 1000));
    expect(await w.client.locateBuild({ buildId: w.job.buildId })).toMatchObject({
      organizationId: w.job.organizationId,
      pipelineId: w.job.pipelineId,
      buildNumber: 7,
    });
    expect((await failure(w.client.locateBuild({ buildId: newId() }))).rawMessage).toBe("No build found");
  });

  it("signs no download for an artifact that is not finished", async () => {
    const w = artifactsWorld();
    const res = await w.client.createArtifactBatch({ ...w.job, batchId: newId(), artifacts: [upload("a")] });
    const signed = await w.client.signArtifactDownload({ ...w.job, id: res.artifacts[0]?.id ?? "" });
    expect(signed).toMatchObject({ url: "", artifact: { state: "new" } });
  });
});

describe("deleting artifacts", () => {
  it("marks the record deleted, removes the object, and the artifact is gone from every read", async () => {
    const { w, jobA, a } = await populated();
    const id = a[0]?.id ?? "";
    const key = w.memory.docs.get(id)?.objectKey ?? "";
    await w.client.deleteArtifact({ buildId: w.job.buildId, jobId: jobA, id });
    expect(w.memory.docs.get(id)).toMatchObject({ state: "deleted", objectRemoved: true });
    expect(w.objects.objects.has(key)).toBe(false);
    const ids = { buildId: w.job.buildId, jobId: jobA, id };
    expect((await failure(w.client.getArtifact(ids))).code).toBe(Code.NotFound);
    expect((await failure(w.client.signArtifactDownload(ids))).code).toBe(Code.NotFound);
    expect((await failure(w.client.deleteArtifact(ids))).code).toBe(Code.NotFound);
    expect((await w.client.listArtifacts({ buildId: w.job.buildId, jobId: jobA })).totalCount).toBe(2);
    const search = await w.client.searchArtifacts({ buildId: w.job.buildId, query: "dist/app.js", jobIds: [jobA] });
    expect(search.artifacts).toEqual([]);
  });

  it("leaves the removal to the sweep when the store is down", async () => {
    const { w, jobA, a } = await populated();
    const id = a[1]?.id ?? "";
    w.objects.state.failRemovals = true;
    await w.client.deleteArtifact({ buildId: w.job.buildId, jobId: jobA, id });
    expect(w.memory.docs.get(id)).toMatchObject({ state: "deleted", objectRemoved: false });
    // The failed removal is told, with its cause and the artifact, not swallowed.
    expect(w.logger.lines).toEqual([
      {
        level: "warn",
        fields: { err: new Error("store unavailable"), artifactId: id },
        message: "artifact object not removed yet; the sweep retries",
      },
    ]);
    await expect(w.sweeper.sweep()).rejects.toThrow("store unavailable");
    w.objects.state.failRemovals = false;
    expect((await w.sweeper.sweep()).removed).toBe(1);
    expect(w.memory.docs.get(id)?.objectRemoved).toBe(true);
    expect(w.objects.objects.size).toBe(4);
  });
});
