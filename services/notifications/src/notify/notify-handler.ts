import type { Client } from "@connectrpc/connect";
import { evaluateCondition, type NotifyRule, notifyFiresOn, type PipelineStep } from "@conveyor/ci-rules";
import type { Build, BuildsService, Job } from "@conveyor/proto/builds";
import type { IdentityService } from "@conveyor/proto/identity";
import type { Pipeline } from "@conveyor/proto/pipelines";
import { createUrls } from "@conveyor/rest-render";
import type { PipelineCache } from "../cache/pipeline-cache.js";
import type { DeliveryIntent, EventHandler } from "../events/handler.js";
import type { NotificationEvent } from "../events/notification-event.js";
import type { Payloads } from "../webhooks/payloads.js";
import {
  buildEmail,
  buildSentence,
  ENDED_JOB_STATES,
  notifyBuildEvent,
  notifyContext,
  notifyStepEvents,
  type StepJob,
  slackText,
} from "./notify-rules.js";

/** Notify rules the builds service carries as JSON (a build's uploaded ones, a job's step's); none when empty. */
const rulesOf = (json: string): NotifyRule[] => (json === "" ? [] : (JSON.parse(json) as NotifyRule[]));

const stepJob = (j: Job): StepJob => ({
  id: j.id,
  stepId: j.stepId,
  state: j.state,
  softFailed: j.softFailed,
  retried: j.retried,
  finishedAtMs: j.finishedAt ? Number(j.finishedAt.seconds) * 1000 + Math.trunc(j.finishedAt.nanos / 1e6) : 0,
});

export interface NotifyHandlerDeps {
  identity: Pick<Client<typeof IdentityService>, "getOrganization">;
  /** The shared pipeline cache (its rules are the parsed `notify:`). */
  pipelines: Pick<PipelineCache, "get">;
  builds: Pick<Client<typeof BuildsService>, "getBuild">;
  payloads: Payloads;
  publicUrl: string;
  webUrl: string;
}

const hostOf = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return "";
  }
};

/** A job's step in the pipeline's steps: by its key, else by its place when the label matches too. */
function stepOf(steps: readonly PipelineStep[], job: Job) {
  if (job.stepKey) return steps.find((s) => s.key === job.stepKey);
  const at = steps[Math.trunc(job.stepPosition)];
  return at && Number.isInteger(job.stepPosition) && at.type === "script" && at.name === job.label ? at : undefined;
}

/**
 * The pipeline YAML's `notify:` (docs/notifications.md#notify): read from the pipeline's configuration when the
 * event happens (parsed once per change of it, by the shared pipeline cache; a pipeline without notify: costs no
 * RPC and no parse per event), each rule that fires on the event and whose `if:` holds becomes a delivery: `notify-webhook`
 * (the webhook body), `email` (subject, text and HTML with the build's link) or `slack` (one per channel, or one to
 * the webhook's own channel). `github_commit_status` and `github_check` are the commit statuses' (docs/statuses.md).
 */
export function createNotifyHandler(deps: NotifyHandlerDeps): EventHandler {
  const urls = createUrls(deps.publicUrl, deps.webUrl);
  const orgSlugs = new Map<string, string>();
  const orgSlug = async (id: string) => {
    let slug = orgSlugs.get(id);
    if (slug === undefined) {
      slug = (await deps.identity.getOrganization({ id })).organization?.slug ?? "";
      if (orgSlugs.size >= 10_000) orgSlugs.clear();
      orgSlugs.set(id, slug);
    }
    return slug;
  };

  const intentsFor = async (
    e: NotificationEvent,
    rules: NotifyRule[],
    level: "build" | "step",
    name: string,
    build: Build,
    pipeline: Pipeline,
    slug: string,
    job?: Job,
  ): Promise<DeliveryIntent[]> => {
    const context = notifyContext(build, pipeline, slug);
    const firing = rules.filter((r) => {
      if (!notifyFiresOn(r, level, name)) return false;
      if (r.if === undefined) return true;
      const result = evaluateCondition(r.if, context);
      return result.ok && result.value;
    });
    if (firing.length === 0) return [];
    const buildUrl = urls.web(`${slug}/${pipeline.slug}/builds/${build.number}`);
    const webUrl = job ? `${buildUrl}#${job.id}` : buildUrl;
    const sentence = job
      ? `${job.label || job.stepKey || "A step"} of build #${build.number} of ${pipeline.name} ${job.state}`
      : buildSentence(pipeline.name, build.number, build.state);
    const intents: DeliveryIntent[] = [];
    for (const [i, rule] of firing.entries()) {
      const key = `${level}:${i}`;
      if (rule.type === "webhook") {
        const body = await deps.payloads.body(e, name);
        if (!body) continue;
        intents.push({
          kind: "notify-webhook",
          event: name,
          targetKey: `${key}:${rule.url}`,
          host: hostOf(rule.url),
          ordered: false,
          request: { url: rule.url, body: JSON.stringify(body) },
        });
      } else if (rule.type === "email") {
        const mail = buildEmail({
          pipelineName: pipeline.name,
          number: build.number,
          state: build.state,
          branch: build.branch,
          commit: build.commit,
          message: build.message,
          webUrl,
        });
        intents.push({
          kind: "email",
          event: name,
          targetKey: `${key}:${rule.address}`,
          host: "",
          ordered: false,
          request: { to: rule.address, ...mail },
        });
      } else if (rule.type === "slack") {
        const text = slackText(sentence, webUrl, rule.message);
        const channels = rule.channels.length > 0 ? rule.channels : [""];
        for (const channel of channels) {
          intents.push({
            kind: "slack",
            event: name,
            targetKey: `${key}:${rule.url}:${channel}`,
            host: hostOf(rule.url),
            ordered: false,
            request: { url: rule.url, payload: channel ? { text, channel } : { text } },
          });
        }
      }
    }
    return intents;
  };

  return {
    name: "notify",
    async intents(e) {
      if (e.type === "agent") return [];
      if (e.type === "build") {
        const name = notifyBuildEvent(e.kind, e.build.state, e.previousState);
        if (!name) return [];
        const cached = await deps.pipelines.get(e.build.organizationId, e.build.pipelineId);
        if (!cached) return [];
        // The configuration's rules, then those the build's uploaded pipelines added.
        const rules = [...cached.rules.buildNotify, ...rulesOf(e.build.uploadedNotifyJson)];
        if (rules.length === 0) return [];
        const slug = await orgSlug(e.build.organizationId);
        return intentsFor(e, rules, "build", name, e.build, cached.pipeline, slug);
      }
      // A job's end is its step's step.finished, and its first hard failure while others run step.failing.
      if (e.job.state === e.previousState || !ENDED_JOB_STATES.has(e.job.state)) return [];
      // The step's rules as the build has them (from the configuration when it was created, or from an upload); a job
      // announced without them (by a builds service before they were carried) is matched to the configuration.
      let notify = rulesOf(e.job.notifyJson);
      const cached = await deps.pipelines.get(e.organizationId, e.pipelineId);
      if (!cached) return [];
      if (notify.length === 0 && e.job.notifyJson === "") {
        const step = stepOf(cached.rules.steps, e.job);
        notify = step?.type === "script" ? (step.notify ?? []) : [];
      }
      if (notify.length === 0) return [];
      const { build } = await deps.builds.getBuild({ pipelineId: e.pipelineId, number: e.buildNumber });
      if (!build) return [];
      const slug = await orgSlug(e.organizationId);
      const intents: DeliveryIntent[] = [];
      for (const name of notifyStepEvents(stepJob(e.job), e.previousState, build.jobs.map(stepJob)))
        intents.push(...(await intentsFor(e, notify, "step", name, build, cached.pipeline, slug, e.job)));
      return intents;
    },
  };
}
