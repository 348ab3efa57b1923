/**
 * What a build's conditionals (`if:`) can see. Built by the builds service from the build being created.
 */
export interface BuildContext {
  /** The build's id and number, for `build.id` / `build.number`; null in conditions when not given. */
  id?: string;
  number?: number;
  branch: string;
  /** The build's state, for notify's `if:` (docs/notifications.md#notify); absent (null) while a build is created. */
  state?: string;
  commit: string;
  message: string;
  /** webhook, api, ui, trigger_job, schedule */
  source: string;
  /** The forge event and action a webhook build came from (push, pull_request…; opened, synchronize…), else null. */
  sourceEvent: string | null;
  sourceAction: string | null;
  tag: string | null;
  env: Record<string, string>;
  /** Draft and fork are null when the forge did not say (and for builds created over REST). */
  pullRequest: {
    id: string | null;
    baseBranch: string | null;
    draft: boolean | null;
    labels: string[];
    repository: string | null;
    fork: boolean | null;
  } | null;
  creator: { id: string; name: string; email: string } | null;
  author: { name: string; email: string } | null;
  pipeline: { slug: string; defaultBranch: string; id: string };
  organization: { slug: string; id: string };
}
