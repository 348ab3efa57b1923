import { Code, ConnectError } from "@connectrpc/connect";
import type {
  GetArtifactRequest,
  ListArtifactsRequest,
  LocateBuildRequest,
  SearchArtifactsRequest,
  SignArtifactDownloadRequest,
} from "@conveyor/proto/artifacts";
import { failedPrecondition, invalidFields, isUuid, notFound, pageWindow, toTimestamp } from "@conveyor/runtime";
import type { ArtifactsContext } from "../artifacts-context.js";
import { ARTIFACT_STATES, type ArtifactState, objectProblem } from "../domain/artifact-state.js";
import { GlobError, MAX_GLOB_LENGTH } from "../domain/glob.js";
import { createPathSearch } from "../domain/search.js";
import type { ArtifactDoc, ArtifactFilter } from "../store/artifact-repository.js";
import { artifactMessage } from "./artifact-message.js";

/** The most artifacts one search answers. */
export const MAX_SEARCH_RESULTS = 10_000;
/** The most job ids a search filter names. */
const MAX_JOB_FILTER = 10_000;

const lower = (ids: readonly string[]) => ids.filter(isUuid).map((id) => id.toLowerCase());

/** A state filter from a request: empty means none (or `fallback`); an unknown state is a field error. */
function stateFilter(state: string, field: string, fallback?: ArtifactState): ArtifactState | undefined {
  if (state === "") return fallback;
  if (!(ARTIFACT_STATES as readonly string[]).includes(state)) throw invalidFields([{ field, code: "is invalid" }]);
  return state as ArtifactState;
}

/** Reading artifacts: search (for agents), list, get, signed downloads, and which build a build id is. */
export function createReadRpcs(ctx: ArtifactsContext) {
  const { repo, store, config } = ctx;

  const requireArtifact = async (req: { buildId: string; jobId: string; id: string }): Promise<ArtifactDoc> => {
    const doc =
      isUuid(req.buildId) && isUuid(req.jobId) && isUuid(req.id)
        ? await repo.find(req.buildId.toLowerCase(), req.jobId.toLowerCase(), req.id.toLowerCase())
        : null;
    if (!doc) throw notFound("artifact");
    return doc;
  };

  return {
    async searchArtifacts(req: SearchArtifactsRequest) {
      if (Array.from(req.query).length > MAX_GLOB_LENGTH) {
        throw invalidFields([{ field: "query", code: `is longer than ${MAX_GLOB_LENGTH} characters` }]);
      }
      if (req.jobIds.length > MAX_JOB_FILTER || req.excludeJobIds.length > MAX_JOB_FILTER) {
        throw invalidFields([{ field: "job_ids", code: "names too many jobs" }]);
      }
      if (!isUuid(req.buildId)) return { artifacts: [] };
      const filter: ArtifactFilter = {
        buildId: req.buildId.toLowerCase(),
        jobIds: lower(req.jobIds),
        excludeJobIds: lower(req.excludeJobIds),
        state: stateFilter(req.state, "state", "finished"),
      };
      // A filter naming jobs of which none is a job UUID names nothing (rather than everything).
      if (req.jobIds.length > 0 && filter.jobIds?.length === 0) return { artifacts: [] };
      let search: ReturnType<typeof createPathSearch<ArtifactDoc>>;
      try {
        search = createPathSearch(req.query, { includeDuplicates: req.includeDuplicates, limit: MAX_SEARCH_RESULTS });
      } catch (err) {
        if (err instanceof GlobError) throw invalidFields([{ field: "query", code: err.message }]);
        throw err;
      }
      for await (const d of repo.scan(filter)) if (!search.add(d)) break;
      const found = search.result();
      if (found.truncated) {
        throw new ConnectError(
          `More than ${MAX_SEARCH_RESULTS} artifacts match: narrow the query or the step`,
          Code.FailedPrecondition,
        );
      }
      const artifacts = await Promise.all(
        found.matches.map(async (d) => ({
          artifact: artifactMessage(d),
          url: d.state === "finished" ? await store.signDownload(d.objectKey, config.downloadTtlS, req.urlBase) : "",
        })),
      );
      return { artifacts };
    },

    async listArtifacts(req: ListArtifactsRequest) {
      const { skip, perPage } = pageWindow(req.page, req.perPage);
      if (!isUuid(req.buildId) || (req.jobId !== "" && !isUuid(req.jobId))) return { artifacts: [], totalCount: 0 };
      const filter: ArtifactFilter = {
        buildId: req.buildId.toLowerCase(),
        ...(req.jobId === "" ? {} : { jobId: req.jobId.toLowerCase() }),
        state: stateFilter(req.state, "state"),
      };
      const page = await repo.list(filter, skip, perPage);
      return { artifacts: page.items.map(artifactMessage), totalCount: page.total };
    },

    async getArtifact(req: GetArtifactRequest) {
      return { artifact: artifactMessage(await requireArtifact(req)) };
    },

    async signArtifactDownload(req: SignArtifactDownloadRequest) {
      const doc = await requireArtifact(req);
      if (doc.state !== "finished") return { artifact: artifactMessage(doc), url: "" };
      // What the store holds must still be what was uploaded: a finished artifact's bytes never change, and an object
      // written again (a reused upload form) or lost is refused rather than served.
      const object = await store.stat(doc.objectKey);
      const problem = objectProblem(doc, object);
      if (problem) {
        ctx.logger.warn({ artifactId: doc._id, jobId: doc.jobId, problem }, "artifact object refused for download");
        throw failedPrecondition(`The artifact's stored object ${problem}: it is not served`);
      }
      const expiresAt = new Date(ctx.now().getTime() + config.downloadTtlS * 1000);
      const url = await store.signDownload(doc.objectKey, config.downloadTtlS, req.urlBase);
      return { artifact: artifactMessage(doc), url, expiresAt: toTimestamp(expiresAt) };
    },

    async locateBuild(req: LocateBuildRequest) {
      const doc = isUuid(req.buildId) ? await repo.anyOfBuild(req.buildId.toLowerCase()) : null;
      if (!doc) throw notFound("build");
      return { organizationId: doc.organizationId, pipelineId: doc.pipelineId, buildNumber: doc.buildNumber };
    },
  };
}
