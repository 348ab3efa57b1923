import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { BuildsService } from "@conveyor/proto/builds";
import { PipelineSchema } from "@conveyor/proto/pipelines";
import { createLogger, stepMessages } from "@conveyor/runtime";
import { MongoClient } from "mongodb";
import { createBuildsParts } from "../builds-context.js";
import { createBuildsService } from "../builds-service.js";
import { createMongoAnnotationRepository } from "../store/annotation-repository.js";
import { createMongoBuildRepository } from "../store/build-repository.js";
import { createMongoConcurrencySlotRepository } from "../store/concurrency-slot-repository.js";
import { createMongoJobLogRepository } from "../store/job-log-repository.js";
import { createMongoPipelineUploadRepository } from "../store/pipeline-upload-repository.js";
import { createMongoWebhookDeliveryRepository } from "../store/webhook-delivery-repository.js";
import { createMongoWebhookPullRequestRepository } from "../store/webhook-pull-request-repository.js";
import { removePipelineBuilds } from "./pipeline-removal.js";

// A deleted pipeline's builds, jobs, logs, annotations, webhook deliveries and pull requests are removed, in batches;
// other pipelines' stay.
const dbName = `it_pipeline_removal_${Date.now()}`;
let mongo: MongoClient;

beforeAll(async () => {
  mongo = await new MongoClient(process.env.MONGODB_URL ?? "").connect();
});
afterAll(async () => {
  await mongo.db(dbName).dropDatabase();
  await mongo.close();
});

it("removes everything of a deleted pipeline's builds, and nothing of another pipeline's", async () => {
  const db = mongo.db(dbName);
  const repos = {
    repo: await createMongoBuildRepository(db),
    logs: await createMongoJobLogRepository(db),
    annotations: await createMongoAnnotationRepository(db),
    uploads: await createMongoPipelineUploadRepository(db),
    deliveries: await createMongoWebhookDeliveryRepository(db),
    pullRequests: await createMongoWebhookPullRequestRepository(db),
  };
  const parts = createBuildsParts({
    ...repos,
    webhooks: repos,
    slots: await createMongoConcurrencySlotRepository(db),
    events: { publish: async () => {} },
    logger: createLogger("test", "silent"),
  });
  const client = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, createBuildsService(parts))),
  );
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
