import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import { stepMessages } from "@conveyor/runtime";
import { createMongoAnnotationRepository } from "../store/annotation-repository.js";
import { createMongoWebhookDeliveryRepository } from "../store/webhook-delivery-repository.js";
import { createMongoWebhookPullRequestRepository } from "../store/webhook-pull-request-repository.js";
import { openBuildsService, testDatabases } from "../test-builds-service.js";
import { removePipelineBuilds } from "./pipeline-removal.js";

// A deleted pipeline's builds, jobs, logs, annotations, webhook deliveries and pull requests are removed, in batches;
// other pipelines' stay.
const databases = testDatabases("it_pipeline_removal");

beforeAll(() => databases.connect());
afterAll(() => databases.close());

it("removes everything of a deleted pipeline's builds, and nothing of another pipeline's", async () => {
  const db = databases.create();
  const webhooks = {
    deliveries: await createMongoWebhookDeliveryRepository(db),
    pullRequests: await createMongoWebhookPullRequestRepository(db),
  };
  const { client, repos: served } = await openBuildsService(db, { webhooks });
  const repos = { ...served, annotations: await createMongoAnnotationRepository(db), ...webhooks };
  const organizationId = randomUUID();
  const pipeline = (slug: string) =>
    create(PipelineSchema, {
      id: randomUUID(),
      organizationId,
      slug,
      name: slug,
      defaultBranch: "main",
      steps: stepMessages([{ type: "script", name: "a", command: "true", agent_query_rules: [] }]),
    });
  const gone = pipeline("gone");
  const kept = pipeline("kept");
  const goneBuilds = [];
  for (let i = 0; i < 5; i++)
    goneBuilds.push((await client.createBuild({ pipeline: gone, commit: "c", branch: "main" })).build);
  const keptBuild = (await client.createBuild({ pipeline: kept, commit: "c", branch: "main" })).build;
  const goneJob = goneBuilds[0]?.jobs[0]?.id ?? "";
  const keptJob = keptBuild?.jobs[0]?.id ?? "";
  for (const jobId of [goneJob, keptJob]) {
    await repos.logs.insertChunk({ jobId, sequence: 0, offset: 0, size: 1, sha256: "", gzip: new Uint8Array([1]) });
  }
  const annotation = (buildId: string) => ({
    id: randomUUID(),
    buildId,
    jobId: null,
    scope: "build" as const,
    context: "default",
    style: "info" as const,
    priority: 3,
    body: "hi",
    bodyHtml: "<p>hi</p>",
    createdAt: new Date(),
    updatedAt: new Date(),
    version: 1,
  });
  await repos.annotations.insert(annotation(goneBuilds[0]?.id ?? ""));
  await repos.annotations.insert(annotation(keptBuild?.id ?? ""));
  // What each pipeline's webhook told of: a delivery, and a pull request.
  const delivery = (pipelineId: string) => ({
    id: `${pipelineId}:github:d-1`,
    pipelineId,
    organizationId,
    organizationSlug: "acme",
    forge: "github",
    event: "push",
    receivedAt: new Date(),
    plan: { builds: [], cancels: [], pullRequests: [], reasons: ["nothing"] },
    leaseUntil: new Date(),
    attempts: 1,
    doneAt: new Date(),
    outcome: { builds: [], canceled: 0, reasons: [] },
  });
  const open = { number: "1", baseBranch: "main", repository: "", labels: [], draft: null };
  for (const p of [gone, kept]) {
    await repos.deliveries.insert(delivery(p.id));
    await repos.pullRequests.record(
      p.id,
      "1",
      { headBranch: "f", fork: false, open: true, pullRequest: open },
      new Date(),
    );
  }

  expect(await removePipelineBuilds(repos, gone.id)).toBe(5);

  expect(await repos.repo.buildIdsOfPipeline(gone.id, 100)).toEqual([]);
  expect(await repos.repo.jobsOf(goneBuilds.map((b) => b?.id ?? ""))).toEqual([]);
  expect((await repos.logs.extent(goneJob)).size).toBe(0);
  expect(await repos.annotations.count(goneBuilds[0]?.id ?? "")).toBe(0);
  expect(await repos.deliveries.find(`${gone.id}:github:d-1`)).toBeNull();
  expect(await repos.pullRequests.openFrom(gone.id, "f")).toBeNull();
  // The other pipeline's build, job, log and annotation are untouched.
  expect(await repos.repo.buildIdsOfPipeline(kept.id, 100)).toEqual([keptBuild?.id]);
  expect((await repos.logs.extent(keptJob)).size).toBe(1);
  expect(await repos.annotations.count(keptBuild?.id ?? "")).toBe(1);
  expect(await repos.deliveries.find(`${kept.id}:github:d-1`)).not.toBeNull();
  expect(await repos.pullRequests.openFrom(kept.id, "f")).toEqual(open);
  // Removing again (a redelivered event) finds nothing and does no harm.
  expect(await removePipelineBuilds(repos, gone.id)).toBe(0);
});
