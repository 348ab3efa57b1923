import type { Client } from "@connectrpc/connect";
import type { NotificationsService } from "@conveyor/proto/notifications";
import { startNotificationsProcess } from "../support/notifications-process.js";
import { eventually, startReceiver } from "../support/webhook-receiver.js";

// A notifications process of this suite's own, beside the stack's (its own database, so its own durable consumers:
// docs/notifications.md), whose OUTBOUND_ALLOW_HOSTS names only 127.0.0.2: receivers on 127.0.0.1 stand for the
// machine's internal services. Loopback is refused by address, by a name resolving to it and through a redirect
// (docs/security.md#outbound-requests); and a process killed while a receiver holds a delivery's request lets its
// claim lapse, the restarted process sends it again with the same delivery id, which the receiver shows once.
const organizationId = process.env.CONVEYOR_ORG_ID ?? "";
let notifications: Awaited<ReturnType<typeof startNotificationsProcess>>;

let internal: Awaited<ReturnType<typeof startReceiver>>;
let allowed: Awaited<ReturnType<typeof startReceiver>>;
let client: Client<typeof NotificationsService>;

beforeAll(async () => {
  internal = await startReceiver("127.0.0.1");
  allowed = await startReceiver("127.0.0.2");
  notifications = await startNotificationsProcess({
    OUTBOUND_ALLOW_HOSTS: "127.0.0.2",
    NOTIFY_LEASE_S: "5",
    NOTIFY_RETRY_BASE_MS: "200",
    NOTIFY_DISPATCH_INTERVAL_MS: "200",
  });
  client = notifications.client;
}, 90_000);

afterAll(async () => {
  await notifications?.remove();
  await Promise.all([internal.close(), allowed.close()]);
});

/** Creates a webhook (a ping is sent) and waits until its delivery is finished; returns it and the webhook. */
async function pingTo(url: string, path?: { receiver: typeof allowed; at: string }) {
  const res = await client.createWebhook({ organizationId, webhook: { url, events: ["ping"], tokenMode: "token" } });
  if (path) path.receiver.tokens.set(path.at, res.token);
  const id = res.webhook?.id ?? "";
  let last = { status: "pending", error: "", attempts: 0 };
  await eventually(`the delivery to ${url}`, async () => {
    last = (await client.listWebhookDeliveries({ organizationId, webhookId: id })).deliveries[0] ?? last;
    return last.status !== "pending";
  });
  return { id, delivery: last };
}

describe("outbound requests the allow list does not cover", () => {
  it("are refused for 127.0.0.1, a name resolving to it, and a redirect to it, sending nothing there", async () => {
    const direct = await pingTo(internal.url("/direct"));
    expect(direct.delivery).toMatchObject({ status: "failed", attempts: 1, error: "127.0.0.1 is a loopback address" });

    const byName = await pingTo(`http://localhost:${internal.port}/by-name`);
    expect(byName.delivery).toMatchObject({ status: "failed", attempts: 1 });
    expect(byName.delivery.error).toBe("localhost resolves to 127.0.0.1 is a loopback address");

    const redirected = await pingTo(allowed.url(`/redirect-to/${encodeURIComponent(internal.url("/redirected"))}`));
    expect(redirected.delivery).toMatchObject({ status: "failed", error: "127.0.0.1 is a loopback address" });

    expect(internal.received).toEqual([]);
    const ok = await pingTo(allowed.url("/ok"), { receiver: allowed, at: "/ok" });
    expect(ok.delivery).toMatchObject({ status: "succeeded", attempts: 1 });
    expect(allowed.at("/ok")[0]).toMatchObject({ event: "ping", verified: true });
  });
});

describe("a restart mid-delivery", () => {
  it("sends the delivery again with the same id, which the receiver shows once", async () => {
    // The first request is held unanswered while the process is killed; the second is answered.
    allowed.setAnswer((path, n) => (path === "/held" && n === 1 ? null : 200));
    const res = await client.createWebhook({
      organizationId,
      webhook: { url: allowed.url("/held"), events: ["ping"], tokenMode: "signature" },
    });
    allowed.tokens.set("/held", res.token);
    await eventually("the held request", () => allowed.at("/held").length === 1);
    await notifications.kill();
    await notifications.start();
    await eventually("the delivery sent again after its claim lapsed", () => allowed.at("/held").length === 2, 30_000);
    const [first, second] = allowed.at("/held");
    expect(second?.delivery).toBe(first?.delivery);
    expect(allowed.unique("/held")).toHaveLength(1);
    expect(allowed.at("/held").every((r) => r.verified)).toBe(true);
    await eventually("the delivery recorded as succeeded", async () => {
      const [d] = (await client.listWebhookDeliveries({ organizationId, webhookId: res.webhook?.id ?? "" })).deliveries;
      return d?.status === "succeeded";
    });
    // Nothing more comes: the succeeded delivery is not sent a third time.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(allowed.at("/held")).toHaveLength(2);
  }, 90_000);
});
