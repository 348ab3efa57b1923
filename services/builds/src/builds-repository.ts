import type { Collection, Db } from "mongodb";

export interface BuildDoc {
  _id: string;
  organizationId: string;
  pipelineId: string;
  number: number;
  state: string;
  branch: string;
  commit: string;
  message: string;
  createdAt: Date;
}

/** Persistence of builds. */
export interface BuildsRepository {
  list(
    filter: { organizationIds: readonly string[]; pipelineId?: string },
    skip: number,
    limit: number,
  ): Promise<BuildDoc[]>;
}

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoBuildsRepository(db: Db): Promise<BuildsRepository> {
  const builds: Collection<BuildDoc> = db.collection("builds");
  await Promise.all([
    builds.createIndex({ pipelineId: 1, number: -1 }, { unique: true, name: "pipeline_number_unique" }),
    builds.createIndex({ organizationId: 1, createdAt: -1, _id: -1 }, { name: "org_newest_first" }),
  ]);
  return {
    list(filter, skip, limit) {
      const query = filter.pipelineId
        ? { pipelineId: filter.pipelineId, organizationId: { $in: [...filter.organizationIds] } }
        : { organizationId: { $in: [...filter.organizationIds] } };
      const sort: Record<string, 1 | -1> = filter.pipelineId
        ? { pipelineId: 1, number: -1 }
        : { createdAt: -1, _id: -1 };
      return builds.find(query).sort(sort).skip(skip).limit(limit).toArray();
    },
  };
}
