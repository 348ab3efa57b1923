import type { ServiceImpl } from "@connectrpc/connect";
import type { BuildsService } from "@conveyor/proto/builds";
import type { WebhookInbox } from "../webhooks/webhook-inbox.js";

/** The webhook RPC: a forge's delivery, handed on by the gateway, to the inbox (webhooks/webhook-inbox.ts). */
export function createWebhookRpcs(inbox: WebhookInbox): Pick<ServiceImpl<typeof BuildsService>, "receiveWebhook"> {
  return {
    async receiveWebhook(req) {
      const receipt = await inbox.receive({
        pipeline: req.pipeline,
        organizationSlug: req.organizationSlug,
        forge: req.forge,
        event: req.event,
        deliveryId: req.deliveryId,
        payload: req.payload,
      });
      return {
        redelivery: receipt.redelivery,
        builds: receipt.builds,
        canceledBuilds: receipt.canceledBuilds,
        reasons: receipt.reasons,
        pending: receipt.pending,
      };
    },
  };
}
