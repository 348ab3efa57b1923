import { randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { CreateArtifactBatchRequest, UpdateArtifactStatesRequest } from "@conveyor/proto/artifacts";
import { failedPrecondition, invalidFields, isUuid, toTimestamp } from "@conveyor/runtime";
import type { ArtifactsContext } from "../artifacts-context.js";
import { transition } from "../domain/artifact-state.js";
import { batchArtifactIds, batchProblems, MAX_BATCH_SIZE, mimeTypeOf, objectKeyOf } from "../domain/batch.js";
import type { ArtifactDoc } from "../store/artifact-repository.js";
import { artifactMessage } from "./artifact-message.js";

/** How many objects one state update checks in the store at once. */
const STAT_CONCURRENCY = 8;

/** Runs `work` over `items`, at most `limit` at a time, keeping the order of the results. */
async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Creating batches of artifacts and recording the states agents report. */
export function createBatchRpcs(ctx: ArtifactsContext) {
  const { repo, store, config } = ctx;

  return {
    async createArtifactBatch(req: CreateArtifactBatchRequest) {
      const ids = { organizationId: req.organizationId, pipelineId: req.pipelineId, buildId: req.buildId };
      const missingIds = (["organizationId", "pipelineId", "buildId", "jobId", "batchId"] as const).filter(
        (k) => !isUuid(req[k]),
      );
      if (missingIds.length > 0) {
        throw invalidFields(missingIds.map((field) => ({ field, code: "must be a UUID" })));
      }
      const announced = req.artifacts.map((a) => ({
        path: a.path,
        fileSize: Number(a.fileSize),
        sha1sum: a.sha1sum,
        sha256sum: a.sha256sum,
        contentType: a.contentType,
        globPath: a.globPath,
      }));
      const problems = batchProblems(announced);
      if (problems.length > 0) throw invalidFields(problems);

      const jobId = req.jobId.toLowerCase();
      const artifactIds = batchArtifactIds(jobId, req.batchId.toLowerCase(), announced.length);
      const stored = new Map((await repo.findByIds(artifactIds)).map((d) => [d._id, d]));
      const now = ctx.now();
      const fresh: ArtifactDoc[] = [];
      artifactIds.forEach((id, i) => {
        if (stored.has(id)) return;
        const a = announced[i] as (typeof announced)[number];
        fresh.push({
          _id: id,
          ...ids,
          buildNumber: req.buildNumber,
          jobId,
          batchId: req.batchId.toLowerCase(),
          position: i,
          state: "new",
          path: a.path.replace(/\\/g, "/"),
          globPath: a.globPath,
          mimeType: mimeTypeOf(a.contentType),
          fileSize: a.fileSize,
          sha1sum: a.sha1sum.toLowerCase(),
          sha256sum: a.sha256sum.toLowerCase(),
          objectKey: objectKeyOf({ buildId: req.buildId, jobId, artifactId: id }, randomBytes(16).toString("hex")),
          createdAt: now,
          uploadedAt: null,
          endedAt: null,
          objectRemoved: false,
        });
      });
      if (fresh.length > 0) {
        if (!(await repo.reserveQuota(jobId, fresh.length, config.maxArtifactsPerJob))) {
          throw new ConnectError(
            `Artifact quota exceeded: a job may upload at most ${config.maxArtifactsPerJob} artifacts`,
            Code.PermissionDenied,
          );
        }
        // And the build's, so that its jobs together stay bounded too (docs/limits.md).
        if (
          !(await repo.reserveQuota(`build:${req.buildId.toLowerCase()}`, fresh.length, config.maxArtifactsPerBuild))
        ) {
          await repo.releaseQuota(jobId, fresh.length);
          throw new ConnectError(
            `Artifact quota exceeded: the jobs of a build may upload at most ${config.maxArtifactsPerBuild} artifacts`,
            Code.PermissionDenied,
          );
        }
        await repo.insertMany(fresh);
      }
      for (const d of fresh) stored.set(d._id, d);
      const docs = artifactIds.map((id) => stored.get(id) as ArtifactDoc);
      if (docs.some((d) => d.jobId !== jobId)) throw new ConnectError("batch id clash", Code.Internal);
      // A batch announced again (its answer lost) signs its artifacts' forms again while they wait for their
      // upload; never once one finished or failed: its bytes are settled, and no form may reach its key again.
      const settled = docs.findIndex((d) => d.state !== "new");
      if (settled >= 0) {
        throw failedPrecondition(
          `Artifact ${settled} of batch ${req.batchId} is already ${docs[settled]?.state}: announce the upload as a new batch`,
        );
      }
      const expiresAt = new Date(now.getTime() + config.uploadTtlS * 1000);
      const uploads = await Promise.all(
        docs.map(async (d) => {
          const form = await store.signUpload(
            { key: d.objectKey, size: d.fileSize, contentType: d.mimeType, expiresAt },
            req.urlBase,
          );
          return {
            artifactId: d._id,
            url: form.url,
            fields: form.fields,
            fileField: form.fileField,
            expiresAt: toTimestamp(expiresAt),
          };
        }),
      );
      return { artifacts: docs.map(artifactMessage), uploads };
    },

    async updateArtifactStates(req: UpdateArtifactStatesRequest) {
      if (req.updates.length > MAX_BATCH_SIZE) {
        throw invalidFields([{ field: "artifacts", code: `has more than ${MAX_BATCH_SIZE} artifacts` }]);
      }
      const bad = req.updates.findIndex((u) => u.state !== "finished" && u.state !== "error");
      if (bad >= 0) throw invalidFields([{ field: `artifacts.${bad}.state`, code: "must be finished or error" }]);
      const jobId = req.jobId.toLowerCase();
      const wanted = req.updates.filter((u) => isUuid(u.id));
      const docs = (await repo.findByIds(wanted.map((u) => u.id.toLowerCase()))).filter((d) => d.jobId === jobId);
      const byId = new Map(docs.map((d) => [d._id, d]));
      const now = ctx.now();
      const finished: Array<{ id: string; etag: string }> = [];
      const failed: string[] = [];
      const strays: string[] = [];
      await mapLimited(wanted, STAT_CONCURRENCY, async (u) => {
        const doc = byId.get(u.id.toLowerCase());
        if (!doc) return;
        if (doc.state !== "new") {
          // Deleted or given up on while the agent was uploading: whatever it uploaded must not stay behind.
          if (u.state === "finished" && doc.state !== "finished") strays.push(doc._id);
          return;
        }
        if (u.state === "error") return void failed.push(doc._id);
        const object = await store.stat(doc.objectKey);
        if (object?.size === doc.fileSize) finished.push({ id: doc._id, etag: object.etag });
        else failed.push(doc._id);
      });
      const error = transition("upload_failed");
      await Promise.all([
        // Each with the store's checksum of what it holds now: downloads refuse an object that no longer has it.
        repo.finishUploads(finished, now, jobId),
        repo.transition(failed, error.from, error.to, { endedAt: now, objectRemoved: false }, jobId),
        repo.requireRemoval(strays),
      ]);
      const after = await repo.findByIds(docs.map((d) => d._id));
      return { artifacts: after.filter((d) => d.state !== "deleted").map(artifactMessage) };
    },
  };
}
