import type { Delivery, Webhook } from "@conveyor/proto/notifications";
import { isoTime } from "@conveyor/runtime";
import { type CliArgs, optionalFlag, requireFlag, UsageError } from "./args.js";
import type { CommandContext, CommandSpec } from "./commands.js";

/** The organization a command names by --org. */
async function organizationOf(args: CliArgs, ctx: CommandContext) {
  const slug = requireFlag(args, "org");
  const { organization } = await ctx.identity().getOrganization({ slug });
  if (!organization) throw new UsageError(`no organization ${slug}`);
  return organization.id;
}

/** A comma-separated flag as a list, without blanks. */
const listOf = (value: string | undefined) =>
  (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

/** A webhook as the commands print it: the REST answer's fields (docs/notifications.md); never its token. */
export function webhookOut(w: Webhook | undefined) {
  return (
    w && {
      id: w.id,
      webhook_url: w.url,
      events: w.events,
      pipeline_ids: w.pipelineIds,
      token_mode: w.tokenMode,
      description: w.description || null,
      created_at: isoTime(w.createdAt),
    }
  );
}

/** A delivery as the commands print it: the REST answer's fields. */
export function deliveryOut(d: Delivery) {
  return {
    id: d.id,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    response_code: d.responseCode || null,
    error: d.error || null,
    duration_ms: d.attempts === 0 ? null : d.durationMs,
    created_at: isoTime(d.createdAt),
    last_attempt_at: isoTime(d.lastAttemptAt),
    next_attempt_at: isoTime(d.nextAttemptAt),
    finished_at: isoTime(d.finishedAt),
  };
}

/** The organization webhook commands (docs/notifications.md#organization-webhooks): add, list, remove, deliveries. */
export const WEBHOOK_COMMANDS: Record<string, CommandSpec> = {
  "webhook add": {
    usage:
      "webhook add --org SLUG --url URL --events EVENT[,EVENT…] [--pipelines SLUG[,SLUG…]] [--signature] [--description TEXT]",
    flags: {
      org: "string",
      url: "string",
      events: "string",
      pipelines: "string",
      signature: "boolean",
      description: "string",
    },
    async run(args, ctx) {
      const organizationId = await organizationOf(args, ctx);
      const pipelineIds: string[] = [];
      for (const slug of listOf(optionalFlag(args, "pipelines"))) {
        const { pipeline } = await ctx.pipelines().getPipeline({ organizationId, pipeline: slug });
        if (!pipeline) throw new UsageError(`no pipeline ${slug}`);
        pipelineIds.push(pipeline.id);
      }
      const { webhook, token } = await ctx.notifications().createWebhook({
        organizationId,
        webhook: {
          url: requireFlag(args, "url"),
          events: listOf(requireFlag(args, "events")),
          pipelineIds,
          tokenMode: args.flags.signature === true ? "signature" : "token",
          description: optionalFlag(args, "description") ?? "",
        },
      });
      // The token is shown this once.
      return { ...webhookOut(webhook), token };
    },
  },
  "webhook list": {
    usage: "webhook list --org SLUG",
    flags: { org: "string" },
    async run(args, ctx) {
      const organizationId = await organizationOf(args, ctx);
      const { webhooks } = await ctx.notifications().listWebhooks({ organizationId });
      return webhooks.map(webhookOut);
    },
  },
  "webhook remove": {
    usage: "webhook remove --org SLUG --id WEBHOOK_ID",
    flags: { org: "string", id: "string" },
    async run(args, ctx) {
      const organizationId = await organizationOf(args, ctx);
      const id = requireFlag(args, "id");
      await ctx.notifications().deleteWebhook({ organizationId, id });
      return { id, removed: true };
    },
  },
  "webhook deliveries": {
    usage: "webhook deliveries --org SLUG --id WEBHOOK_ID",
    flags: { org: "string", id: "string" },
    async run(args, ctx) {
      const organizationId = await organizationOf(args, ctx);
      const { deliveries } = await ctx
        .notifications()
        .listWebhookDeliveries({ organizationId, webhookId: requireFlag(args, "id") });
      return deliveries.map(deliveryOut);
    },
  },
};
