import { Code } from "@connectrpc/connect";
import { newId } from "@conveyor/runtime";
import { artifactsWorld, failure, upload } from "../test-support.js";

const DAY = 24 * 3600 * 1000;

async function finishedArtifacts(w: ReturnType<typeof artifactsWorld>, organizationId: string, n: number) {
  const res = await w.client.createArtifactBatch({
    ...w.job,
    organizationId,
    jobId: newId(),
    batchId: newId(),
    artifacts: Array.from({ length: n }, (_, i) => upload(`f${i}`, 3)),
  });
  for (const a of res.artifacts) w.objects.objects.set(w.memory.docs.get(a.id)?.objectKey ?? "", 3);
  await w.client.updateArtifactStates({
    jobId: res.artifacts[0]?.jobId ?? "",
    updates: res.artifacts.map((a) => ({ id: a.id, state: "finished" })),
  });
  return res.artifacts;
}

describe("the artifacts sweep", () => {
  it("expires artifacts past their organization's retention (or the default) and removes their objects", async () => {
    const w = artifactsWorld({ defaultRetentionDays: 30 });
    const [orgA, orgB] = [newId(), newId()];
    await w.client.setArtifactRetention({ organizationId: orgA, days: 7 });
    const a = await finishedArtifacts(w, orgA, 2);
    const b = await finishedArtifacts(w, orgB, 2);
    const start = w.clock.now.getTime();
    w.clock.now = new Date(start + 6 * DAY);
    expect(await w.sweeper.sweep()).toEqual({ abandoned: 0, expired: 0, removed: 0 });
    w.clock.now = new Date(start + 8 * DAY);
    expect(await w.sweeper.sweep()).toEqual({ abandoned: 0, expired: 2, removed: 2 });
    expect(a.map((x) => w.memory.docs.get(x.id)?.state)).toEqual(["expired", "expired"]);
    expect(b.map((x) => w.memory.docs.get(x.id)?.state)).toEqual(["finished", "finished"]);
    expect(w.objects.objects.size).toBe(2);
    // Expired artifacts are still listed and read, with no download.
    const signed = await w.client.signArtifactDownload({
      buildId: w.job.buildId,
      jobId: a[0]?.jobId ?? "",
      id: a[0]?.id ?? "",
    });
    expect(signed).toMatchObject({ url: "", artifact: { state: "expired" } });
    w.clock.now = new Date(start + 31 * DAY);
    expect((await w.sweeper.sweep()).expired).toBe(2);
    expect(w.objects.objects.size).toBe(0);
  });

  it("works in bounded batches and finishes over several sweeps", async () => {
    const w = artifactsWorld({ defaultRetentionDays: 1, sweepBatch: 3 });
    await finishedArtifacts(w, newId(), 70);
    w.clock.now = new Date(w.clock.now.getTime() + 2 * DAY);
    // 20 rounds of 3 at most per sweep.
    expect((await w.sweeper.sweep()).expired).toBe(60);
    expect((await w.sweeper.sweep()).expired).toBe(10);
    expect(w.objects.objects.size).toBe(0);
  });

  it("marks uploads never reported finished as error after the abandon window, and removes what they left", async () => {
    const w = artifactsWorld({ abandonAfterS: 3600 });
    const res = await w.client.createArtifactBatch({ ...w.job, batchId: newId(), artifacts: [upload("late", 3)] });
    const id = res.artifacts[0]?.id ?? "";
    w.objects.objects.set(w.memory.docs.get(id)?.objectKey ?? "", 3);
    w.clock.now = new Date(w.clock.now.getTime() + 3599 * 1000);
    expect((await w.sweeper.sweep()).abandoned).toBe(0);
    w.clock.now = new Date(w.clock.now.getTime() + 2000);
    expect(await w.sweeper.sweep()).toEqual({ abandoned: 1, expired: 0, removed: 1 });
    expect(w.memory.docs.get(id)?.state).toBe("error");
    expect(w.objects.objects.size).toBe(0);
    // A finish reported afterwards changes nothing.
    await w.client.updateArtifactStates({ jobId: w.job.jobId, updates: [{ id, state: "finished" }] });
    expect(w.memory.docs.get(id)?.state).toBe("error");
  });
});

describe("artifact retention", () => {
  it("is the default until set, 1 to 3650 days, and 0 returns to the default", async () => {
    const w = artifactsWorld({ defaultRetentionDays: 30 });
    const organizationId = newId();
    expect(await w.client.getArtifactRetention({ organizationId })).toMatchObject({ days: 30, isDefault: true });
    expect(await w.client.setArtifactRetention({ organizationId, days: 90 })).toMatchObject({
      days: 90,
      isDefault: false,
    });
    expect((await w.client.getArtifactRetention({ organizationId })).days).toBe(90);
    expect((await failure(w.client.setArtifactRetention({ organizationId, days: 3651 }))).code).toBe(
      Code.InvalidArgument,
    );
    expect((await failure(w.client.setArtifactRetention({ organizationId, days: -1 }))).code).toBe(
      Code.InvalidArgument,
    );
    expect(await w.client.setArtifactRetention({ organizationId, days: 0 })).toMatchObject({
      days: 30,
      isDefault: true,
    });
  });
});
