import { isOutboundRefused, type OutboundClient } from "@conveyor/runtime";
import type { Channel } from "../dispatch/channel.js";
import { retryableStatus } from "../domain/retry-policy.js";
import type { WebhookRepository } from "../store/webhook-repository.js";
import { signatureHeader } from "./signature.js";

/**
 * Sends organization webhooks' deliveries: a POST of the body recorded with the event, with `X-Buildkite-Event`,
 * `X-Buildkite-Delivery` (the delivery's id: the same on every attempt, so a receiver can drop a repeat) and the
 * webhook's current token as `X-Buildkite-Token` or a fresh `X-Buildkite-Signature`. A webhook removed meanwhile
 * ends its deliveries; a 2xx is success; 408, 429 and 5xx are tried again; an address refused is not.
 */
export function createWebhookChannel(
  webhooks: Pick<WebhookRepository, "get">,
  http: Pick<OutboundClient, "request">,
  now: () => Date = () => new Date(),
): Channel {
  return {
    kind: "webhook",
    async send(d, signal) {
      const req = d.request as { webhookId: string; url: string; body: string };
      const hook = await webhooks.get(d.organizationId, req.webhookId);
      if (!hook) return { ok: false, responseCode: 0, error: "the webhook was removed", retryable: false };
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "user-agent": "Conveyor-Hookshot",
        "x-buildkite-event": d.event,
        "x-buildkite-delivery": d._id,
      };
      if (hook.tokenMode === "signature") {
        headers["x-buildkite-signature"] = signatureHeader(hook.token, req.body, Math.floor(now().getTime() / 1000));
      } else {
        headers["x-buildkite-token"] = hook.token;
      }
      try {
        const res = await http.request(hook.url, { method: "POST", headers, body: req.body, signal });
        const ok = res.status >= 200 && res.status < 300;
        return {
          ok,
          responseCode: res.status,
          error: ok ? "" : `answered ${res.status}`,
          retryable: !ok && retryableStatus(res.status),
        };
      } catch (err) {
        return { ok: false, responseCode: 0, error: (err as Error).message, retryable: !isOutboundRefused(err) };
      }
    },
  };
}
