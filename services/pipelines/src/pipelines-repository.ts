import type { Collection, Db } from "mongodb";

export interface PipelineDoc {
  _id: string;
  organizationId: string;
  slug: string;
  name: string;
  repository: string;
  clusterId: string | null;
  createdAt: Date;
  archivedAt: Date | null;
}

/** Persistence of pipelines. */
export interface PipelinesRepository {
  list(
    organizationId: string,
    includeArchived: boolean,
    skip: number,
    limit: number,
  ): Promise<{ items: PipelineDoc[]; total: number }>;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoPipelinesRepository(db: Db): Promise<PipelinesRepository> {
  const pipelines: Collection<PipelineDoc> = db.collection("pipelines");
  await Promise.all([
    pipelines.createIndex({ organizationId: 1, slug: 1 }, { unique: true, name: "org_slug_unique" }),
    pipelines.createIndex({ organizationId: 1, createdAt: -1, _id: -1 }, { name: "org_newest_first" }),
  ]);
  return {
    async list(organizationId, includeArchived, skip, limit) {
      const filter = includeArchived ? { organizationId } : { organizationId, archivedAt: null };
      const [items, total] = await Promise.all([
        pipelines.find(filter).sort({ organizationId: 1, createdAt: -1, _id: -1 }).skip(skip).limit(limit).toArray(),
        pipelines.countDocuments(filter),
      ]);
      return { items, total };
    },
  };
}
