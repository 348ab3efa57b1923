/**
 * Builds as the read RPCs answer them, with a version naming their content so that a caller holding an answer
 * (the gateway's rendered-answer cache) can be told "not modified" instead of being sent the build again.
 *
 * A version is a hash of the message's binary encoding: equal versions mean equal answers, whichever replica computed
 * them and however the build was read. The message and its version are remembered per (build, jobs) object pair, which
 * the read cache hands out unchanged until an invalidation replaces them: a build read from the cache again costs
 * neither the conversion nor the encoding.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { type Build as BuildMessage, BuildSchema } from "@conveyor/proto/builds";
import { contentVersion } from "@conveyor/runtime";
import type { Build } from "../domain/build.js";
import type { Job } from "../domain/job.js";
import { buildMessage } from "./build-message.js";

export interface BuildAnswer {
  message: BuildMessage;
  version: string;
}

/** No jobs: one array for every build shown without them, so that what is remembered of it is found again. */
export const NO_JOBS: readonly Job[] = Object.freeze([]);

/** Per build object, per jobs array: the message shown with and without retried jobs. */
const remembered = new WeakMap<Build, WeakMap<readonly Job[], { all?: BuildAnswer; current?: BuildAnswer }>>();

/** A build's jobs as answers show them: the attempts a retry replaced only when asked for. */
export const visibleJobs = (jobs: readonly Job[], includeRetried: boolean): readonly Job[] =>
  includeRetried ? jobs : jobs.filter((j) => !j.retried);

/** The Build message of `build` with `jobs` (retried attempts only when `includeRetried`), and its version. */
export function buildAnswer(build: Build, jobs: readonly Job[], includeRetried: boolean): BuildAnswer {
  let byJobs = remembered.get(build);
  if (!byJobs) {
    byJobs = new WeakMap();
    remembered.set(build, byJobs);
  }
  let entry = byJobs.get(jobs);
  if (!entry) {
    entry = {};
    byJobs.set(jobs, entry);
  }
  const slot = includeRetried ? "all" : "current";
  const kept = entry[slot];
  if (kept) return kept;
  const message = create(BuildSchema, buildMessage(build, visibleJobs(jobs, includeRetried)));
  const shown = { message, version: contentVersion(toBinary(BuildSchema, message)) };
  entry[slot] = shown;
  return shown;
}

/** The version of a page: its builds' versions in order, and whether another page follows. */
export function pageVersion(versions: readonly string[], hasMore: boolean): string {
  return contentVersion(...versions, hasMore ? "+" : ".");
}
