import { isDuplicateKeyError } from "@conveyor/runtime";
import type { Collection, Db } from "mongodb";
import type { Annotation, AnnotationContent } from "../domain/annotations.js";

/** The build's own annotations (null) or one job's job-scoped annotations. */
export type AnnotationOwner = string | null;

/** Persistence of build annotations. */
export interface AnnotationRepository {
  find(buildId: string, jobId: AnnotationOwner, context: string): Promise<Annotation | null>;
  /** One annotation by its id (REST names it by its UUID). */
  findById(id: string): Promise<Annotation | null>;
  /** Inserts an annotation; false when its (build, job, context) is taken already. */
  insert(annotation: Annotation): Promise<boolean>;
  /** Changes an annotation only if its version is still `version`; returns it changed, or null. */
  update(id: string, version: number, content: AnnotationContent, updatedAt: Date): Promise<Annotation | null>;
  /** Removes an annotation; false when there was none. */
  remove(buildId: string, jobId: AnnotationOwner, context: string): Promise<boolean>;
  /** How many annotations a build holds, its jobs' included. */
  count(buildId: string): Promise<number>;
  /** How many annotations `list` lists of the build's own (null) or of one job's. */
  countOf(buildId: string, jobId: AnnotationOwner): Promise<number>;
  /** Removes every annotation of these builds (their pipeline was deleted). */
  removeOfBuilds(buildIds: readonly string[]): Promise<void>;
  /** Highest priority first, then oldest first; one more than `limit` tells that more follow. */
  list(buildId: string, jobId: AnnotationOwner, skip: number, limit: number): Promise<Annotation[]>;
}

/** How an annotation is stored: a build's own annotations have the job "", so the unique index covers them too. */
type AnnotationDoc = Omit<Annotation, "id" | "jobId"> & { _id: string; jobId: string };

const toDoc = ({ id, jobId, ...rest }: Annotation): AnnotationDoc => ({ ...rest, _id: id, jobId: jobId ?? "" });
const fromDoc = ({ _id, jobId, ...rest }: AnnotationDoc): Annotation => ({
  ...rest,
  id: _id,
  jobId: jobId === "" ? null : jobId,
});

/** The MongoDB implementation; creates its indexes before returning. */
export async function createMongoAnnotationRepository(db: Db): Promise<AnnotationRepository> {
  const annotations: Collection<AnnotationDoc> = db.collection("annotations");
  await Promise.all([
    annotations.createIndex({ buildId: 1, jobId: 1, context: 1 }, { unique: true, name: "build_job_context_unique" }),
    annotations.createIndex({ buildId: 1, jobId: 1, priority: -1, createdAt: 1 }, { name: "build_job_order" }),
  ]);
  const owner = (buildId: string, jobId: AnnotationOwner) => ({ buildId, jobId: jobId ?? "" });

  return {
    async find(buildId, jobId, context) {
      const doc = await annotations.findOne({ ...owner(buildId, jobId), context });
      return doc && fromDoc(doc);
    },
    async findById(id) {
      const doc = await annotations.findOne({ _id: id });
      return doc && fromDoc(doc);
    },
    async insert(annotation) {
      try {
        await annotations.insertOne(toDoc(annotation));
        return true;
      } catch (err) {
        if (isDuplicateKeyError(err)) return false;
        throw err;
      }
    },
    async update(id, version, content, updatedAt) {
      const doc = await annotations.findOneAndUpdate(
        { _id: id, version },
        {
          $set: {
            style: content.style,
            priority: content.priority,
            body: content.body,
            bodyHtml: content.bodyHtml,
            updatedAt,
            version: version + 1,
          },
        },
        { returnDocument: "after" },
      );
      return doc && fromDoc(doc);
    },
    async remove(buildId, jobId, context) {
      const { deletedCount } = await annotations.deleteOne({ ...owner(buildId, jobId), context });
      return deletedCount > 0;
    },
    count: (buildId) => annotations.countDocuments({ buildId }),
    countOf: (buildId, jobId) => annotations.countDocuments(owner(buildId, jobId)),
    async removeOfBuilds(buildIds) {
      if (buildIds.length > 0) await annotations.deleteMany({ buildId: { $in: [...buildIds] } });
    },
    async list(buildId, jobId, skip, limit) {
      const docs = await annotations
        .find(owner(buildId, jobId))
        .sort({ buildId: 1, jobId: 1, priority: -1, createdAt: 1, _id: 1 })
        .skip(skip)
        .limit(limit)
        .toArray();
      return docs.map(fromDoc);
    },
  };
}
