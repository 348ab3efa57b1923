import { invalidFields, notFound } from "@conveyor/runtime";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import type { Build } from "../domain/build.js";
import { COMMIT_REPORT_KEY, resolveCommit } from "../domain/commit-report.js";
import { requireRunningJob } from "../jobs/running-job.js";

/** Bounds of build meta-data: every key and value is checked, and a build holds a bounded number of keys. */
export const META_DATA_LIMITS = {
  maxKeyLength: 255,
  maxValueBytes: 100 * 1024,
  maxKeys: 1000,
  /** All keys and values of a build together: the build's document holds them twice and must stay far below 16 MiB. */
  maxTotalBytes: 1024 * 1024,
} as const;

/** The bytes a build's meta-data takes: every key and value. */
function totalBytes(metaData: Record<string, string>): number {
  let total = 0;
  for (const [key, value] of Object.entries(metaData)) total += Buffer.byteLength(key) + Buffer.byteLength(value);
  return total;
}

/** Why a meta-data key cannot be stored, or null when it can. */
export function metaDataKeyProblem(key: string): string | null {
  if (key.trim() === "") return "can't be blank";
  if (key.length > META_DATA_LIMITS.maxKeyLength)
    return `is too long (maximum is ${META_DATA_LIMITS.maxKeyLength} characters)`;
  // Control characters would end up in URLs, logs and REST filters.
  if (/\p{Cc}/u.test(key)) return "must not contain control characters";
  return null;
}

/** Build meta-data as agents read and write it (docs/compatibility.md#meta-data): build-level keys, strings only. */
export function createBuildMetaData(ctx: BuildsContext) {
  const { repo, withLock, logger } = ctx;

  const requireBuild = async (buildId: string): Promise<Build> => {
    const build = buildId === "" ? null : await repo.findBuildById(buildId);
    if (!build) throw notFound("build");
    return build;
  };

  /** Checks every key and value; InvalidArgument naming each bad one. */
  const check = (items: ReadonlyArray<{ key: string; value: string }>) => {
    const problems = [];
    for (const [index, { key, value }] of items.entries()) {
      const problem = metaDataKeyProblem(key);
      if (problem) problems.push({ field: `items[${index}].key`, code: problem });
      if (Buffer.byteLength(value) > META_DATA_LIMITS.maxValueBytes)
        problems.push({
          field: `items[${index}].value`,
          code: `is too long (maximum is ${META_DATA_LIMITS.maxValueBytes} bytes)`,
        });
    }
    if (problems.length > 0) throw invalidFields(problems);
  };

  /**
   * The build's real commit (and message) when a job reports the commit its agent checked out
   * (docs/compatibility.md#the-real-commit): written with the meta-data, so it changes once, on the first report.
   */
  const commitUpdate = (build: Build, items: ReadonlyArray<{ key: string; value: string }>, jobId: string) => {
    const reported = jobId === "" ? undefined : items.findLast((item) => item.key === COMMIT_REPORT_KEY);
    if (!reported) return {};
    const resolution = resolveCommit(build, reported.value);
    if (resolution.kind === "ignored")
      logger.info({ buildId: build.id, jobId, reason: resolution.reason }, "commit report ignored");
    return resolution.kind === "resolve" ? resolution.update : {};
  };

  /** Stores checked items; the caller holds the build's lock. */
  const store = async (buildId: string, items: ReadonlyArray<{ key: string; value: string }>, jobId = "") => {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const build = await requireBuild(buildId);
      const metaData = { ...build.metaData };
      for (const { key, value } of items) metaData[key] = value;
      if (Object.keys(metaData).length > META_DATA_LIMITS.maxKeys)
        throw invalidFields([
          { field: "items", code: `would give the build more than ${META_DATA_LIMITS.maxKeys} keys` },
        ]);
      if (totalBytes(metaData) > META_DATA_LIMITS.maxTotalBytes)
        throw invalidFields([
          {
            field: "items",
            code: `would give the build more than ${META_DATA_LIMITS.maxTotalBytes} bytes of meta-data`,
          },
        ]);
      if (await repo.updateBuild(build.id, build.version, { metaData, ...commitUpdate(build, items, jobId) })) return;
    }
    throw new Error(`build ${buildId} kept changing while its meta-data was set`);
  };

  return {
    /**
     * Sets every item, or none when one is invalid or the build would hold too many keys. With `jobId` (an agent
     * writing through a job), only while that job of the build runs.
     */
    async set(buildId: string, items: ReadonlyArray<{ key: string; value: string }>, jobId = "") {
      check(items);
      if (jobId !== "") await requireRunningJob(repo, jobId, buildId);
      await requireBuild(buildId);
      await withLock(buildId, () => store(buildId, items, jobId));
    },

    /** Sets every item (or none) while the caller holds the build's lock. */
    async setLocked(buildId: string, items: ReadonlyArray<{ key: string; value: string }>) {
      check(items);
      await store(buildId, items);
    },

    async get(buildId: string, key: string): Promise<{ exists: boolean; value: string }> {
      const build = await requireBuild(buildId);
      const value = Object.hasOwn(build.metaData, key) ? build.metaData[key] : undefined;
      return value === undefined ? { exists: false, value: "" } : { exists: true, value };
    },

    async keys(buildId: string): Promise<string[]> {
      return Object.keys((await requireBuild(buildId)).metaData);
    },
  };
}

export type BuildMetaData = ReturnType<typeof createBuildMetaData>;
