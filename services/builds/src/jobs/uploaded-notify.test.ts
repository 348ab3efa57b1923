import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { BuildsService } from "@conveyor/proto/builds";
import { createMemoryBuildsService } from "../testing.js";
import { MAX_UPLOADED_NOTIFY_RULES } from "./uploaded-notify.js";

const SLACK = "https://hooks.slack.com/services/T/B/x";

async function uploading() {
  const memory = createMemoryBuildsService();
  const client = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, memory.service)),
  );
  const { build, jobs } = await memory.seedBuild({ jobs: [{ state: "running" }] });
  const jobId = jobs[0]?.id ?? "";
  const read = async () => (await client.getBuild({ pipelineId: build.pipelineId, number: build.number })).build;
  return { memory, client, build, jobId, read };
}

describe("notify in uploaded pipelines", () => {
  it("adds the upload's build-level notify to the build and gives its steps' jobs their own, once per upload", async () => {
    const { client, jobId, read } = await uploading();
    const pipeline = [
      "notify:",
      "  - email: dev@example.com",
      '    if: build.state == "failed"',
      "steps:",
      "  - label: Uploaded",
      "    command: make test",
      "    notify:",
      `      - slack: ${SLACK}`,
      "  - command: make lint",
    ].join("\n");
    const uuid = randomUUID();
    await client.uploadPipeline({ jobId, pipeline, uuid });
    // The agent sends the same upload again when an answer is lost: nothing is added twice.
    await client.uploadPipeline({ jobId, pipeline, uuid });
    const build = await read();
    expect(JSON.parse(build?.uploadedNotifyJson ?? "")).toEqual([
      { type: "email", address: "dev@example.com", if: 'build.state == "failed"' },
    ]);
    const byLabel = new Map(build?.jobs.map((j) => [j.label, j]));
    expect(JSON.parse(byLabel.get("Uploaded")?.notifyJson ?? "")).toEqual([
      { type: "slack", url: SLACK, channels: [] },
    ]);
    expect(build?.jobs.find((j) => j.command === "make lint")?.notifyJson).toBe("");

    // A second upload adds its own after the first's.
    await client.uploadPipeline({
      jobId,
      pipeline: "notify:\n  - webhook: https://hooks.example/up\nsteps:\n  - command: x\n",
      uuid: randomUUID(),
    });
    expect(JSON.parse((await read())?.uploadedNotifyJson ?? "").map((r: { type: string }) => r.type)).toEqual([
      "email",
      "webhook",
    ]);
  });

  it("refuses commit statuses in an upload, and rules past the build's bound, naming the field", async () => {
    const { client, jobId, read } = await uploading();
    const refused = (pipeline: string) =>
      client.uploadPipeline({ jobId, pipeline, uuid: randomUUID() }).then(
        () => null,
        (err: unknown) => ConnectError.from(err),
      );
    const status = await refused("notify:\n  - github_commit_status: {context: x}\nsteps:\n  - command: x\n");
    expect(status?.code).toBe(Code.InvalidArgument);
    expect(status?.message).toContain("pipeline.notify[0].github_commit_status");

    const twenty = `notify:\n${"  - email: a@example.com\n".repeat(20)}steps:\n  - command: x\n`;
    for (let i = 0; i < MAX_UPLOADED_NOTIFY_RULES / 20; i++)
      await client.uploadPipeline({ jobId, pipeline: twenty, uuid: randomUUID() });
    const past = await refused(twenty);
    expect(past?.code).toBe(Code.InvalidArgument);
    expect(past?.message).toContain("pipeline.notify");
    expect(JSON.parse((await read())?.uploadedNotifyJson ?? "")).toHaveLength(MAX_UPLOADED_NOTIFY_RULES);
  });
});
