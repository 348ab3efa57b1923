import type { NotifyRule } from "@conveyor/ci-rules";
import { type BuildsContext, MAX_ATTEMPTS } from "../builds-context.js";
import type { Build } from "../domain/build.js";

/** The build-level notify rules all the uploads into one build may add, at most (docs/limits.md). */
export const MAX_UPLOADED_NOTIFY_RULES = 100;

/** The build-level rules the uploads into a build added, in upload order. */
export const uploadedNotifyRules = (build: Pick<Build, "notifyUploads">): NotifyRule[] =>
  (build.notifyUploads ?? []).flatMap((u) => u.rules);

/** Why an upload's build-level rules cannot be added to a build, or null when they can. */
export function uploadedNotifyProblem(build: Pick<Build, "notifyUploads">, rules: readonly NotifyRule[]) {
  const total = uploadedNotifyRules(build).length + rules.length;
  return total > MAX_UPLOADED_NOTIFY_RULES
    ? `would give the build ${total} notifications from uploaded pipelines (at most ${MAX_UPLOADED_NOTIFY_RULES})`
    : null;
}

/**
 * Adds an upload's build-level `notify:` to its build (docs/notifications.md#notify-in-uploaded-pipelines): once per
 * upload (a replayed upload finds its id there), by a compare-and-set on the build's version. The caller holds the
 * build's lock.
 */
export async function addUploadedNotify(ctx: BuildsContext, buildId: string, uploadId: string, rules: NotifyRule[]) {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const build = await ctx.repo.findBuildById(buildId);
    if (!build || build.notifyUploads?.some((u) => u.id === uploadId)) return;
    const notifyUploads = [...(build.notifyUploads ?? []), { id: uploadId, rules }];
    if (await ctx.repo.updateBuild(build.id, build.version, { notifyUploads })) return;
  }
  throw new Error(`build ${buildId} kept changing while an upload's notify was added`);
}
