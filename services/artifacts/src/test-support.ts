import { createClient, createRouterTransport } from "@connectrpc/connect";
import { ArtifactsService } from "@conveyor/proto/artifacts";
import { newId } from "@conveyor/runtime";
import type { ArtifactsContext } from "./artifacts-context.js";
import { createArtifactsService } from "./artifacts-service.js";
import { createMemoryObjectStore } from "./object-store/memory-object-store.js";
import { createMemoryArtifactRepository } from "./store/memory-artifact-repository.js";
import { createSweeper } from "./sweep/sweeper.js";

/** A logger that keeps what it is told, so tests can check that a failure worked around is not silent. */
function createRecordingLogger() {
  const lines: Array<{ level: "warn" | "info"; fields: unknown; message?: string }> = [];
  const logger: ArtifactsContext["logger"] & { lines: typeof lines } = {
    lines,
    warn: (fields: unknown, message?: string) => void lines.push({ level: "warn", fields, message }),
    info: (fields: unknown, message?: string) => void lines.push({ level: "info", fields, message }),
  };
  return logger;
}

/** The artifacts service over in-memory fakes, a settable clock, a recording logger, and a client of it. */
export function artifactsWorld(config: Partial<ArtifactsContext["config"]> = {}) {
  const memory = createMemoryArtifactRepository();
  const objects = createMemoryObjectStore();
  const clock = { now: new Date("2026-03-01T00:00:00.000Z") };
  const logger = createRecordingLogger();
  const ctx: ArtifactsContext = {
    repo: memory.repo,
    store: objects.store,
    config: {
      defaultRetentionDays: 30,
      maxArtifactsPerJob: 1000,
      maxArtifactsPerBuild: 100_000,
      uploadTtlS: 3600,
      abandonAfterS: 86_400,
      downloadTtlS: 60,
      sweepIntervalMs: 60_000,
      sweepBatch: 100,
      ...config,
    },
    now: () => clock.now,
    logger,
  };
  const transport = createRouterTransport((router) => router.service(ArtifactsService, createArtifactsService(ctx)));
  const client = createClient(ArtifactsService, transport);
  const job = { organizationId: newId(), pipelineId: newId(), buildId: newId(), buildNumber: 7, jobId: newId() };
  return { ctx, client, memory, objects, clock, job, logger, sweeper: createSweeper(ctx) };
}

/** An artifact as a batch announces it. */
export function upload(path: string, fileSize = 3, over: Record<string, unknown> = {}) {
  return { path, fileSize: BigInt(fileSize), sha1sum: "a".repeat(40), sha256sum: "", contentType: "", ...over };
}

/** The ConnectError a promise rejects with. */
export async function failure(p: Promise<unknown>): Promise<{ code: number; rawMessage: string; message: string }> {
  try {
    await p;
  } catch (err) {
    return err as { code: number; rawMessage: string; message: string };
  }
  throw new Error("expected a failure");
}
