/**
 * Which forge sent a webhook delivery, which event it is and which delivery, from its headers alone
 * (docs/webhooks.md). Gitea and Forgejo also send GitHub's and Gogs's headers, so theirs are looked at first.
 */
import type { Forge } from "./webhook-event.js";

/** Request headers as Node gives them: lower-case names, a value or several. */
export type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

/** A recognised delivery: its forge, its event name and the forge's id of it ("" when it sent none). */
export interface RecognisedDelivery {
  forge: Forge;
  event: string;
  deliveryId: string;
}

/** One header's value: the first when it came several times, "" when absent. */
export function header(headers: HeaderBag, name: string): string {
  const value = headers[name.toLowerCase()];
  return (Array.isArray(value) ? value[0] : value)?.trim() ?? "";
}

/** The first of these headers that is present. */
const firstOf = (headers: HeaderBag, names: readonly string[]) =>
  names.map((n) => header(headers, n)).find((v) => v !== "") ?? "";

/** How each forge is recognised, in the order they are tried: its event header and its delivery id headers. */
const FORGE_HEADERS: ReadonlyArray<{ forge: Forge; event: readonly string[]; delivery: readonly string[] }> = [
  {
    forge: "gitea",
    event: ["X-Forgejo-Event", "X-Gitea-Event", "X-Gogs-Event"],
    delivery: ["X-Forgejo-Delivery", "X-Gitea-Delivery", "X-Gogs-Delivery"],
  },
  // GitLab 17 sends an Idempotency-Key that its retries repeat; before it, the event's UUID is what a resend repeats.
  { forge: "gitlab", event: ["X-Gitlab-Event"], delivery: ["Idempotency-Key", "X-Gitlab-Event-UUID"] },
  // X-Hook-UUID names the webhook, the same for all its deliveries: only X-Request-UUID names one delivery.
  { forge: "bitbucket", event: ["X-Event-Key"], delivery: ["X-Request-UUID"] },
  { forge: "github", event: ["X-GitHub-Event"], delivery: ["X-GitHub-Delivery"] },
];

/** The longest event name or delivery id taken: real ones are far shorter. */
const MAX_HEADER = 200;

/** Recognises a delivery by its headers, or says why it is not one this receiver takes. */
export function recogniseDelivery(headers: HeaderBag): RecognisedDelivery | { problem: string } {
  for (const known of FORGE_HEADERS) {
    const event = firstOf(headers, known.event);
    if (event === "") continue;
    const deliveryId = firstOf(headers, known.delivery);
    if (event.length > MAX_HEADER || deliveryId.length > MAX_HEADER || /\p{Cc}/u.test(event + deliveryId)) {
      return { problem: "The delivery's event or delivery id header is not one a forge sends." };
    }
    return { forge: known.forge, event, deliveryId };
  }
  return {
    problem:
      "This is not a webhook delivery this URL takes: it carries none of the headers X-GitHub-Event, X-Gitlab-Event, X-Event-Key (Bitbucket) or X-Gitea-Event.",
  };
}
