import { send, stack, unique } from "../support/stack-env.js";
import { eventually, startReceiver } from "../support/webhook-receiver.js";

// The notifications service keeps pipelines (with their parsed notify:) and organizations' webhooks between events
// (docs/notifications.md#what-the-handlers-read). On the stack: a pipeline read while it had no notify: notifies as
// soon as it is edited to have one (the pipelines service's event drops it), and a webhook changed through the API
// takes effect at the next event (the service's own write drops the organization's list). Both within 10 s, well
// inside the caches' 30 s TTL (NOTIFY_CACHE_TTL_MS), so that only the invalidation can make them pass.
const SOON_MS = 10_000;
const base = `/v2/organizations/${stack.orgSlug}`;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

const createBuild = async (slug: string, message: string) => {
  const build = await send("POST", `${base}/pipelines/${slug}/builds`, stack.apiToken, {
    commit: "HEAD",
    branch: "main",
    message,
  });
  expect(build.status).toBe(201);
  return build.body as { id: string; number: number };
};

describe("what the notifications service keeps between events", () => {
  it("follows a pipeline's edits and a webhook's changes at the next event", async () => {
    const tag = unique("cache");
    const pipeline = await send("POST", `${base}/pipelines`, stack.apiToken, {
      name: tag,
      repository: "/tmp/nothing",
      cluster_id: stack.clusterId,
      configuration: "steps:\n  - command: echo hi\n",
    });
    expect(pipeline.status).toBe(201);
    const slug = pipeline.body.slug as string;
    // An organization webhook for this pipeline only: its delivery of the first build shows that the service read
    // (and keeps) the pipeline while it had no notify:.
    const hookPath = `/${tag}/org`;
    const hook = await send("POST", `${base}/webhooks`, stack.apiToken, {
      webhook_url: receiver.url(hookPath),
      events: ["build.scheduled"],
      pipeline_ids: [pipeline.body.id],
    });
    expect(hook.status).toBe(201);
    receiver.tokens.set(hookPath, hook.body.token);
    const first = await createBuild(slug, "before notify:");
    await eventually("the first build.scheduled", () =>
      receiver.at(hookPath).some((r) => (r.body.build as { id?: string } | undefined)?.id === first.id),
    );

    const notifyPath = `/${tag}/notify`;
    const edited = await send("PATCH", `${base}/pipelines/${slug}`, stack.apiToken, {
      configuration: `notify:\n  - webhook: ${receiver.url(notifyPath)}\nsteps:\n  - command: echo hi\n`,
    });
    expect(edited.status).toBe(200);
    const second = await createBuild(slug, "after notify:");
    await eventually(
      "notify:'s build.scheduled of the second build",
      () => receiver.at(notifyPath).some((r) => (r.body.build as { id?: string } | undefined)?.id === second.id),
      SOON_MS,
    );
    expect(receiver.at(notifyPath).some((r) => (r.body.build as { id?: string } | undefined)?.id === first.id)).toBe(
      false,
    );

    // The webhook now hears build.finished too: the next build's end reaches it.
    const patched = await send("PATCH", `${base}/webhooks/${hook.body.id}`, stack.apiToken, {
      events: ["build.scheduled", "build.finished"],
    });
    expect(patched.status).toBe(200);
    const cancel = await send("PUT", `${base}/pipelines/${slug}/builds/${second.number}/cancel`, stack.apiToken);
    expect(cancel.status).toBe(200);
    await eventually(
      "the webhook's build.finished",
      () =>
        receiver
          .at(hookPath)
          .some((r) => r.event === "build.finished" && (r.body.build as { id?: string } | undefined)?.id === second.id),
      SOON_MS,
    );
    expect(receiver.at(hookPath).every((r) => r.verified)).toBe(true);
  });
});
