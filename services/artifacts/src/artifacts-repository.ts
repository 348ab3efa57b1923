import type { Collection, Db } from "mongodb";

export interface ArtifactDoc {
  _id: string;
  buildId: string;
  jobId: string;
  state: "new" | "error" | "finished" | "deleted" | "expired";
  path: string;
  mimeType: string;
  fileSize: number;
  sha1sum: string;
  createdAt: Date;
}

/** Persistence of artifact records. */
export interface ArtifactsRepository {
  list(
    filter: { buildId: string; jobId?: string },
    skip: number,
    limit: number,
  ): Promise<{ items: ArtifactDoc[]; total: number }>;
}

/** The MongoDB implementation; creates its indexes before returning. Deleted artifacts are never listed. */
export async function createMongoArtifactsRepository(db: Db): Promise<ArtifactsRepository> {
  const artifacts: Collection<ArtifactDoc> = db.collection("artifacts");
  await artifacts.createIndex({ buildId: 1, jobId: 1, createdAt: 1, _id: 1 }, { name: "build_job_order" });
  return {
    async list(filter, skip, limit) {
      const query = {
        buildId: filter.buildId,
        ...(filter.jobId ? { jobId: filter.jobId } : {}),
        state: { $ne: "deleted" as const },
      };
      const [items, total] = await Promise.all([
        artifacts.find(query).sort({ createdAt: 1, _id: 1 }).skip(skip).limit(limit).toArray(),
        artifacts.countDocuments(query),
      ]);
      return { items, total };
    },
  };
}
