import { createClient, createRouterTransport } from "@connectrpc/connect";
import { BuildsService } from "@conveyor/proto/builds";
import { COMMIT_REPORT_KEY } from "../domain/commit-report.js";
import { createMemoryBuildsService } from "../testing.js";

// The real commit (docs/compatibility.md#the-real-commit): the agent's report through a running job gives a build made
// for a ref its SHA, and the message when it had none, once.
const SHA = "8e898afcb15d34da2859ce3433f5c889514c449a";
const OTHER = "0123456789abcdef0123456789abcdef01234567";
const report = (sha: string, subject = "Fix the thing") =>
  `commit ${sha}\nabbrev-commit ${sha.slice(0, 7)}\nAuthor: Jane <j@x.org>\n\n    ${subject}\n\n`;

async function setUp(fields: { commit: string; message: string }) {
  const builds = createMemoryBuildsService();
  const client = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, builds.service)),
  );
  const { build, jobs } = await builds.seedBuild({ jobs: [{ state: "running" }, { state: "running" }] });
  const updated = await builds.repos.builds.updateBuild(build.id, build.version, fields);
  if (!updated) throw new Error("the seeded build could not be given its commit");
  const stored = async () => {
    const found = await builds.repos.builds.findBuildById(build.id);
    if (!found) throw new Error("the build is gone");
    return found;
  };
  const reportThrough = (job: number, value: string) =>
    client.setBuildMetaData({
      buildId: build.id,
      jobId: jobs[job]?.id ?? "",
      items: [{ key: COMMIT_REPORT_KEY, value }],
    });
  return { build, stored, reportThrough, client };
}

describe("the real commit", () => {
  it("gives a build made for HEAD the reported SHA and, as it had no message, the commit's", async () => {
    const { stored, reportThrough } = await setUp({ commit: "HEAD", message: "" });
    await reportThrough(0, report(SHA));
    const build = await stored();
    expect(build.commit).toBe(SHA);
    expect(build.message).toBe("Fix the thing");
    expect(build.metaData[COMMIT_REPORT_KEY]).toBe(report(SHA));
  });

  it("keeps the message a build was created with", async () => {
    const { stored, reportThrough } = await setUp({ commit: "main", message: "Nightly" });
    await reportThrough(0, report(SHA));
    expect(await stored()).toMatchObject({ commit: SHA, message: "Nightly" });
  });

  it("changes the build once: a later report of another commit is ignored", async () => {
    const { stored, reportThrough } = await setUp({ commit: "HEAD", message: "" });
    await reportThrough(0, report(SHA));
    await reportThrough(1, report(OTHER, "Something else"));
    expect(await stored()).toMatchObject({ commit: SHA, message: "Fix the thing" });
  });

  it("leaves a build created for a full SHA as it is", async () => {
    const { stored, reportThrough } = await setUp({ commit: OTHER, message: "" });
    await reportThrough(0, report(SHA));
    expect(await stored()).toMatchObject({ commit: OTHER, message: "" });
  });

  it("takes the report only from a job: meta-data set without one leaves the commit", async () => {
    const { build, stored, client } = await setUp({ commit: "HEAD", message: "" });
    await client.setBuildMetaData({ buildId: build.id, items: [{ key: COMMIT_REPORT_KEY, value: report(SHA) }] });
    expect((await stored()).commit).toBe("HEAD");
  });
});
