import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Build, BuildReadSchema, ListBuildsResponse } from "@conveyor/proto/builds";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { callErrorFrom, contentVersion } from "@conveyor/runtime";
import { LRUCache } from "lru-cache";
import type { GatewayClients } from "../../clients/gateway-clients.js";
import { personName } from "../format.js";

/** How many recent builds the organization page shows per pipeline, as small bars. */
export const RECENT_BUILDS = 30;
/** The reads one ReadBuilds call may carry (the builds service's MAX_READS_PER_CALL). */
const READS_PER_CALL = 100;
/** What the kept lists may take (their estimated size), per gateway. */
const KEPT_BYTES = 16 * 1024 * 1024;

/** What the organization page shows of a build. */
export interface BuildSummary {
  number: number;
  state: string;
  branch: string;
  /** The first line of its message. */
  title: string;
  commit: string;
  createdAt: Timestamp | undefined;
  /** Its creator's (or else its author's) name. */
  who: string;
}

/** What the organization page shows of a pipeline's builds. */
export interface RecentBuilds {
  /** The latest builds, newest first, at most RECENT_BUILDS. */
  recent: BuildSummary[];
  /** The latest build of the pipeline's default branch (or of any branch when it has none). */
  latestDefault: BuildSummary | undefined;
  /**
   * Names all of the above: equal versions, equal builds (the builds service's versions of the two lists); empty when
   * the service named none, and then nothing may be kept under it.
   */
  version: string;
}

/** A list as kept: the builds service's version of it, and its builds as summaries. */
interface Kept {
  version: string;
  builds: BuildSummary[];
}

function summaryOf(b: Build): BuildSummary {
  return {
    number: b.number,
    state: b.state,
    branch: b.branch,
    title: b.message.split("\n", 1)[0] ?? "",
    commit: b.commit,
    createdAt: b.createdAt,
    who: personName(b.creator) || personName(b.author),
  };
}

/** About what a kept list takes in memory. */
function sizeOf(kept: Kept): number {
  let n = 64 + kept.version.length;
  for (const b of kept.builds)
    n += 96 + b.state.length + b.branch.length + b.title.length + b.commit.length + b.who.length;
  return n * 2;
}

/**
 * The recent builds of many pipelines of one organization, for the organization page, in as few calls as the builds
 * service allows: two list reads per pipeline (its latest builds, and its default branch's latest one, which may be
 * older) sent together in ReadBuilds calls of up to 100 reads, the calls at once, each list without jobs.
 *
 * A page of 30 pipelines is 900 builds, whose encoding and decoding alone would cost far more than the page may take.
 * So the reader keeps each list it was sent (as summaries, bounded in size) with the builds service's version of it,
 * and asks with `if_none_match`: a list that did not change comes back as "not modified", with no builds. Nothing is
 * shown on the gateway's word alone: every list is confirmed current by the builds service in the request that shows
 * it (as answer-cache/answer-cache.ts does for the REST API).
 */
export function createRecentBuildsReader(clients: Pick<GatewayClients, "builds">) {
  const kept = new LRUCache<string, Kept>({ maxSize: KEPT_BYTES, sizeCalculation: sizeOf });

  /** One list: its builds, from the answer or (not modified) from what was kept and sent as its version. */
  const listOf = (res: ListBuildsResponse, key: string, held: Kept | undefined): Kept => {
    if (res.notModified) {
      // Only a version this reader sent can be answered not modified, and it sent only what it held.
      if (!held) throw new Error("ReadBuilds answered not modified to a list read without a version");
      return held;
    }
    const list = { version: res.version, builds: res.builds.map(summaryOf) };
    if (res.version !== "") kept.set(key, list);
    return list;
  };

  return async function recentBuildsOf(
    organizationId: string,
    pipelines: readonly Pipeline[],
  ): Promise<Map<string, RecentBuilds>> {
    const reads: Array<{ key: string; held: Kept | undefined; read: MessageInitShape<typeof BuildReadSchema> }> = [];
    const add = (key: string, value: { pipelineId: string; perPage: number; branches: string[] }) => {
      const held = kept.get(key);
      const list = { organizationIds: [organizationId], excludeJobs: true, page: 1, ...value };
      reads.push({ key, held, read: { read: { case: "list", value: { ...list, ifNoneMatch: held?.version ?? "" } } } });
    };
    for (const p of pipelines) {
      add(`${p.id}|recent`, { pipelineId: p.id, perPage: RECENT_BUILDS, branches: [] });
      if (p.defaultBranch !== "") {
        add(`${p.id}|branch|${p.defaultBranch}`, { pipelineId: p.id, perPage: 1, branches: [p.defaultBranch] });
      }
    }
    const calls: Array<Promise<Kept[]>> = [];
    for (let i = 0; i < reads.length; i += READS_PER_CALL) {
      const batch = reads.slice(i, i + READS_PER_CALL);
      calls.push(
        clients.builds.readBuilds({ reads: batch.map((r) => r.read) }).then((res) => {
          if (res.results.length !== batch.length) {
            throw new Error(`ReadBuilds answered ${res.results.length} reads of ${batch.length}`);
          }
          return res.results.map((r, j) => {
            const asked = batch[j] as (typeof batch)[number];
            if (r.result.case === "list") return listOf(r.result.value, asked.key, asked.held);
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
      const recent = answers[at++] as Kept;
      const branch = p.defaultBranch !== "" ? (answers[at++] as Kept) : undefined;
      out.set(p.id, {
        recent: recent.builds,
        latestDefault: branch ? branch.builds[0] : recent.builds[0],
        // A list without a version (a service that names none) makes the whole uncacheable.
        version:
          recent.version === "" || branch?.version === "" ? "" : contentVersion(recent.version, branch?.version ?? "-"),
      });
    }
    return out;
  };
}

/** Reads the recent builds of an organization's pipelines (see createRecentBuildsReader). */
export type RecentBuildsReader = ReturnType<typeof createRecentBuildsReader>;
