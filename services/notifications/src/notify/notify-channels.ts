import { isOutboundRefused, type OutboundClient } from "@conveyor/runtime";
import nodemailer from "nodemailer";
import type { Channel } from "../dispatch/channel.js";
import { type AttemptOutcome, retryableStatus } from "../domain/retry-policy.js";

/** What an HTTP answer (or failure) comes to. */
async function posted(
  http: Pick<OutboundClient, "request">,
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<AttemptOutcome> {
  try {
    const res = await http.request(url, { method: "POST", headers, body, signal });
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
}

/** `notify: - webhook: URL`: a POST of the recorded body with X-Buildkite-Event and X-Buildkite-Delivery. */
export function createNotifyWebhookChannel(http: Pick<OutboundClient, "request">): Channel {
  return {
    kind: "notify-webhook",
    send(d, signal) {
      const req = d.request as { url: string; body: string };
      const headers = {
        "content-type": "application/json",
        "user-agent": "Conveyor-Hookshot",
        "x-buildkite-event": d.event,
        "x-buildkite-delivery": d._id,
      };
      return posted(http, req.url, headers, req.body, signal);
    },
  };
}

/** `notify: - slack: …`: a POST of `{text, channel?}` to the incoming-webhook URL, as Slack takes it. */
export function createSlackChannel(http: Pick<OutboundClient, "request">): Channel {
  return {
    kind: "slack",
    send(d, signal) {
      const req = d.request as { url: string; payload: Record<string, string> };
      return posted(http, req.url, { "content-type": "application/json" }, JSON.stringify(req.payload), signal);
    },
  };
}

/**
 * `notify: - email: ADDRESS`: a message with a plain-text and an HTML body through the SMTP server in SMTP_URL
 * (from SMTP_FROM). Without SMTP_URL nothing can be sent: the delivery fails saying so. A 4xx reply from the server
 * is tried again, a 5xx is not.
 */
export function createEmailChannel(smtpUrl: string | undefined, from: string): Channel {
  const transport = smtpUrl ? nodemailer.createTransport(smtpUrl) : null;
  return {
    kind: "email",
    async send(d) {
      if (!transport) return { ok: false, responseCode: 0, error: "SMTP_URL is not set", retryable: false };
      const req = d.request as { to: string; subject: string; text: string; html: string };
      try {
        await transport.sendMail({
          from,
          to: req.to,
          subject: req.subject,
          text: req.text,
          html: req.html,
          headers: { "X-Buildkite-Event": d.event },
          messageId: `<${d._id}@conveyor>`,
        });
        return { ok: true, responseCode: 250, error: "", retryable: false };
      } catch (err) {
        const code = (err as { responseCode?: number }).responseCode ?? 0;
        return { ok: false, responseCode: code, error: (err as Error).message, retryable: code === 0 || code < 500 };
      }
    },
  };
}
