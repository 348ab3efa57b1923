/**
 * What a forge is answered for a delivery (docs/webhooks.md#answers), which its delivery log shows: a sentence, the
 * builds made (with their links), how many builds were canceled, and why events built nothing.
 */
import type { ReceiveWebhookResponse } from "@conveyor/proto/builds";
import { type Static, Type } from "@sinclair/typebox";
import { buildApiUrl } from "../render/build.js";
import { Int, NullableInt, NullableStr, Str } from "../render/schemas.js";
import type { Urls } from "../render/urls.js";

/** The answer to a delivery. */
export const WebhookAnswerSchema = Type.Object(
  {
    message: Str,
    /** A redelivery: nothing was done again, and the rest is what the first delivery did. */
    redelivery: Type.Boolean(),
    builds: Type.Array(
      Type.Object({
        /** Null until the build exists (a delivery answered 202). */
        number: NullableInt,
        branch: Str,
        commit: Str,
        url: NullableStr,
        web_url: NullableStr,
      }),
    ),
    canceled_builds: Int,
    reasons: Type.Array(Str),
  },
  { title: "WebhookDelivery" },
);
export type WebhookAnswer = Static<typeof WebhookAnswerSchema>;

/** The answer for what the builds service did with a delivery to pipeline `pipelineSlug` of `orgSlug`. */
export function webhookAnswer(
  res: ReceiveWebhookResponse,
  view: { urls: Urls; orgSlug: string; pipelineSlug: string },
): WebhookAnswer {
  const builds = res.builds.map((b) => ({
    number: b.number > 0 ? b.number : null,
    branch: b.branch,
    commit: b.commit,
    url: b.number > 0 ? buildApiUrl(view.urls, view.orgSlug, view.pipelineSlug, b.number) : null,
    web_url: b.number > 0 ? view.urls.web(`${view.orgSlug}/${view.pipelineSlug}/builds/${b.number}`) : null,
  }));
  return {
    message: sentence(res),
    redelivery: res.redelivery,
    builds,
    canceled_builds: res.canceledBuilds,
    reasons: res.reasons,
  };
}

function sentence(res: ReceiveWebhookResponse): string {
  const count = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;
  if (res.redelivery) return "Received before: nothing was done again.";
  if (res.pending) return `Received: ${count(res.builds.length, "build")} will be created shortly.`;
  const done = [
    ...(res.builds.length > 0 ? [`${count(res.builds.length, "build")} created`] : []),
    ...(res.canceledBuilds > 0 ? [`${count(res.canceledBuilds, "build")} canceled`] : []),
  ];
  return done.length > 0 ? `Received: ${done.join(", ")}.` : "Received: nothing to build.";
}
