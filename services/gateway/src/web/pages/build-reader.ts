import type { Build, Job } from "@conveyor/proto/builds";
import { LRUCache } from "lru-cache";
import type { GatewayClients } from "../../clients/gateway-clients.js";

/** What the kept builds may take (their estimated size), per gateway. */
const KEPT_BYTES = 32 * 1024 * 1024;

/** A build with every attempt of its jobs, and the builds service's version of it ("" when it named none). */
export interface ReadBuild {
  build: Build | undefined;
  version: string;
}

/** About what a kept build takes in memory: its jobs' texts and a fixed share per job for the rest. */
function sizeOf(kept: ReadBuild): number {
  const texts = (j: Job) => j.command.length + j.label.length + j.name.length + (j.block?.prompt.length ?? 0);
  let n = 2048 + (kept.build?.message.length ?? 0);
  for (const job of kept.build?.jobs ?? []) n += 1024 + texts(job);
  return n * 2;
}

/**
 * Reads builds for the build page and its live stream (GetBuild with every attempt, REST's include_retried_jobs
 * view). A build of 200 jobs costs the builds service and the gateway more to encode and decode than the page takes
 * to render, and a build that is watched or reloaded rarely changed since the last read: the reader keeps each build
 * it was sent (bounded in size) with the builds service's version of it and asks with `if_none_match`, so an
 * unchanged build comes back "not modified", without its jobs. Nothing is shown on the gateway's word alone: every
 * read is confirmed current by the builds service (as recent-builds.ts does for lists). The kept builds are shared:
 * nothing may change them.
 */
export function createBuildReader(clients: Pick<GatewayClients, "builds">) {
  const kept = new LRUCache<string, ReadBuild>({ maxSize: KEPT_BYTES, sizeCalculation: sizeOf });
  return async function readBuild(pipelineId: string, number: number): Promise<ReadBuild> {
    const key = `${pipelineId}|${number}`;
    const held = kept.get(key);
    const res = await clients.builds.getBuild({
      pipelineId,
      number,
      includeRetriedJobs: true,
      ifNoneMatch: held?.version ?? "",
    });
    if (res.notModified) {
      // Only a version this reader sent can be answered not modified, and it sent only what it held.
      if (!held) throw new Error("GetBuild answered not modified to a read without a version");
      return held;
    }
    const read = { build: res.build, version: res.version };
    if (res.build && res.version !== "") kept.set(key, read);
    else kept.delete(key);
    return read;
  };
}

/** Reads a build with every attempt, confirmed current (see createBuildReader). */
export type BuildReader = ReturnType<typeof createBuildReader>;
