import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Build, BuildReadSchema } from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { callErrorFrom } from "@conveyor/runtime";
import type { GatewayClients } from "../../clients/gateway-clients.js";

/** How many recent builds the organization page shows per pipeline, as small bars. */
export const RECENT_BUILDS = 30;
/** The reads one ReadBuilds call may carry (the builds service's MAX_READS_PER_CALL). */
const READS_PER_CALL = 100;

/** What the organization page shows of a pipeline's builds. */
export interface RecentBuilds {
  /** The latest builds, newest first, at most RECENT_BUILDS. */
  recent: Build[];
  /** The latest build of the pipeline's default branch (or of any branch when it has none). */
  latestDefault: Build | undefined;
}

/**
 * The recent builds of many pipelines of one organization, in as few calls as the builds service allows: two list
 * reads per pipeline (its latest builds, and its default branch's latest one, which may be older than those) sent
 * together in ReadBuilds calls of up to 100 reads, the calls at once. The builds service answers each read as its own
 * ListBuilds, from its read cache when current. Builds come without their jobs.
 */
export async function recentBuildsOf(
  clients: Pick<GatewayClients, "builds">,
  organizationId: string,
  pipelines: readonly Pipeline[],
): Promise<Map<string, RecentBuilds>> {
  const reads: Array<MessageInitShape<typeof BuildReadSchema>> = [];
  const common = { organizationIds: [organizationId], excludeJobs: true, page: 1 };
  for (const p of pipelines) {
    reads.push({ read: { case: "list", value: { ...common, pipelineId: p.id, perPage: RECENT_BUILDS } } });
    if (p.defaultBranch !== "") {
      reads.push({
        read: { case: "list", value: { ...common, pipelineId: p.id, branches: [p.defaultBranch], perPage: 1 } },
      });
    }
  }
  const calls: Array<Promise<Build[][]>> = [];
  for (let i = 0; i < reads.length; i += READS_PER_CALL) {
    const batch = reads.slice(i, i + READS_PER_CALL);
    calls.push(
      clients.builds.readBuilds({ reads: batch }).then((res) => {
        if (res.results.length !== batch.length) {
          throw new Error(`ReadBuilds answered ${res.results.length} reads of ${batch.length}`);
        }
        return res.results.map((r) => {
          if (r.result.case === "list") return r.result.value.builds;
          if (r.result.case === "error") throw callErrorFrom(r.result.value);
          throw new Error("ReadBuilds answered a list read with something else");
        });
      }),
    );
  }
  const answers = (await Promise.all(calls)).flat();
  const out = new Map<string, RecentBuilds>();
  let at = 0;
  for (const p of pipelines) {
    const recent = answers[at++] ?? [];
    const latestDefault = p.defaultBranch !== "" ? answers[at++]?.[0] : recent[0];
    out.set(p.id, { recent, latestDefault });
  }
  return out;
}
