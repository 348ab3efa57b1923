import { ciAdminJson } from "../support/ci-admin.js";
import { send, stack, unique } from "../support/stack-env.js";
import { eventually, startReceiver } from "../support/webhook-receiver.js";

// Organization notification webhooks on the stack (docs/notifications.md): a local receiver verifies every
// signature as Buildkite documents it; a build's life arrives as Buildkite's events with REST's shapes; a receiver
// failing a few times gets the delivery after retries; internal addresses the stack's allow list (127.0.0.1 only)
// does not cover are refused; the deliveries list shows it all. test/notifications/delivery.e2e.test.ts covers
// loopback refusals and a restart with a notifications process of its own.
const base = `/v2/organizations/${stack.orgSlug}`;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

/** Creates a webhook posting to `path` of the receiver (or to `url`), and lets the receiver know its token. */
async function createWebhook(path: string, body: Record<string, unknown>) {
  const res = await send("POST", `${base}/webhooks`, stack.apiToken, { webhook_url: receiver.url(path), ...body });
  expect(res.status).toBe(201);
  receiver.tokens.set(path, res.body.token);
  return res.body as { id: string; token: string; deliveries_url: string };
}

const deliveriesOf = async (id: string) =>
  (await send("GET", `${base}/webhooks/${id}/deliveries`, stack.apiToken)).body;

describe("organization notification webhooks", () => {
  it("sign a ping and a build's life, with REST's build and pipeline, and list the deliveries", async () => {
    const path = `/signed-${unique("h")}`;
    const hook = await createWebhook(path, {
      events: ["ping", "build.scheduled", "build.finished"],
      token_mode: "signature",
    });
    expect(hook.token).toMatch(/^[0-9a-f]{64}$/);
    await eventually("the ping", () => receiver.at(path).some((r) => r.event === "ping"));

    const slug = unique("notify");
    const pipeline = await send("POST", `${base}/pipelines`, stack.apiToken, {
      name: slug,
      repository: "/tmp/nothing",
      cluster_id: stack.clusterId,
      configuration: "steps:\n  - command: echo hi\n",
    });
    expect(pipeline.status).toBe(201);
    const build = await send("POST", `${base}/pipelines/${pipeline.body.slug}/builds`, stack.apiToken, {
      commit: "HEAD",
      branch: "main",
      message: "notify me",
    });
    expect(build.status).toBe(201);
    await eventually("build.scheduled", () => receiver.at(path).some((r) => r.event === "build.scheduled"));
    const cancel = await send(
      "PUT",
      `${base}/pipelines/${pipeline.body.slug}/builds/${build.body.number}/cancel`,
      stack.apiToken,
    );
    expect(cancel.status).toBe(200);
    await eventually("build.finished", () => receiver.at(path).some((r) => r.event === "build.finished"));

    const got = receiver.at(path);
    expect(got.every((r) => r.verified)).toBe(true);
    expect(got.map((r) => r.event)).toEqual(["ping", "build.scheduled", "build.finished"]);
    const scheduled = got[1]?.body as Record<string, Record<string, unknown>>;
    expect(scheduled.event).toBe("build.scheduled");
    expect(scheduled.build).toMatchObject({
      id: build.body.id,
      number: build.body.number,
      state: "scheduled",
      message: "notify me",
      web_url: build.body.web_url,
      url: build.body.url,
    });
    expect(scheduled.build?.jobs).toBeUndefined();
    expect(scheduled.pipeline).toMatchObject({ id: pipeline.body.id, slug: pipeline.body.slug });
    expect(scheduled.sender).toMatchObject({ id: process.env.CONVEYOR_USER_ID });
    expect(got[2]?.body.build).toMatchObject({ state: "canceled" });
    expect(new Set(got.map((r) => r.delivery)).size).toBe(3);

    await eventually("three succeeded deliveries", async () => {
      const list = await deliveriesOf(hook.id);
      return list.length === 3 && list.every((d: { status: string }) => d.status === "succeeded");
    });
    const list = await deliveriesOf(hook.id);
    expect(list[0]).toMatchObject({ event: "build.finished", status: "succeeded", attempts: 1, response_code: 200 });
    expect(list.map((d: { id: string }) => d.id).sort()).toEqual(got.map((r) => r.delivery).sort());
    // The token is never answered again.
    const read = await send("GET", `${base}/webhooks/${hook.id}`, stack.apiToken);
    expect(read.text).not.toContain(hook.token);
  });

  it("send job events with REST's job and build", async () => {
    const path = `/jobs-${unique("h")}`;
    await createWebhook(path, { events: ["job.scheduled", "job.finished"], token_mode: "signature" });
    const pipeline = await send("POST", `${base}/pipelines`, stack.apiToken, {
      name: unique("jobs"),
      repository: "/tmp/nothing",
      cluster_id: stack.clusterId,
      configuration: "steps:\n  - label: Only\n    command: echo hi\n",
    });
    const build = await send("POST", `${base}/pipelines/${pipeline.body.slug}/builds`, stack.apiToken, {
      commit: "HEAD",
      branch: "main",
    });
    await eventually("job.scheduled", () => receiver.at(path).some((r) => r.event === "job.scheduled"));
    await send("PUT", `${base}/pipelines/${pipeline.body.slug}/builds/${build.body.number}/cancel`, stack.apiToken);
    await eventually("job.finished", () => receiver.at(path).some((r) => r.event === "job.finished"));
    const [jobId] = build.body.jobs.map((j: { id: string }) => j.id);
    const finished = receiver.at(path).find((r) => r.event === "job.finished");
    expect(finished?.verified).toBe(true);
    expect(finished?.body).toMatchObject({
      event: "job.finished",
      job: { id: jobId, label: "Only", state: "canceled" },
      build: { id: build.body.id, number: build.body.number },
      pipeline: { slug: pipeline.body.slug },
    });
  });

  it("tries a failing receiver again until it answers, with the same delivery id and a token", async () => {
    const path = `/flaky-${unique("h")}`;
    receiver.setAnswer((p, n) => (p === path && n <= 2 ? 503 : 200));
    const hook = await createWebhook(path, { events: ["ping"] });
    await eventually("the third attempt", () => receiver.at(path).length >= 3, 60_000);
    const got = receiver.at(path);
    expect(got.every((r) => r.verified && r.event === "ping")).toBe(true);
    expect(new Set(got.map((r) => r.delivery)).size).toBe(1);
    await eventually("the delivery succeeded", async () => (await deliveriesOf(hook.id))[0]?.status === "succeeded");
    expect((await deliveriesOf(hook.id))[0]).toMatchObject({ attempts: 3, response_code: 200, error: null });
    receiver.setAnswer(() => 200);
  });

  it.each([
    ["the cloud metadata address", "http://169.254.169.254/latest/meta-data", "169.254.169.254 is a linkLocal address"],
    ["an IPv6 loopback literal", "http://[::1]:9/", "::1 is a loopback address"],
    ["a private address", "http://10.0.0.1/hook", "10.0.0.1 is a private address"],
  ])("refuse %s without trying again", async (_what, url, error) => {
    const res = await send("POST", `${base}/webhooks`, stack.apiToken, { webhook_url: url, events: ["ping"] });
    expect(res.status).toBe(201);
    await eventually("the refusal", async () => (await deliveriesOf(res.body.id))[0]?.status === "failed");
    expect((await deliveriesOf(res.body.id))[0]).toMatchObject({ attempts: 1, response_code: null, error });
    await send("DELETE", `${base}/webhooks/${res.body.id}`, stack.apiToken);
  });

  it("refuse a redirect to the metadata address", async () => {
    const path = `/redirect-to/${encodeURIComponent("http://169.254.169.254/latest")}`;
    const res = await send("POST", `${base}/webhooks`, stack.apiToken, {
      webhook_url: receiver.url(path),
      events: ["ping"],
    });
    await eventually("the refusal", async () => (await deliveriesOf(res.body.id))[0]?.status === "failed");
    expect((await deliveriesOf(res.body.id))[0]?.error).toBe("169.254.169.254 is a linkLocal address");
    await send("DELETE", `${base}/webhooks/${res.body.id}`, stack.apiToken);
  });

  it("name a wrong field in a 422 and change nothing", async () => {
    const before = (await send("GET", `${base}/webhooks`, stack.apiToken)).body.length;
    for (const body of [
      { webhook_url: "ftp://x.example/", events: ["ping"] },
      { webhook_url: "https://x.example/", events: ["build.started"] },
      { webhook_url: "https://x.example/", events: ["ping"], token_mode: "hmac" },
      { webhook_url: "https://x.example/", events: ["ping"], secret: "mine" },
    ]) {
      const res = await send("POST", `${base}/webhooks`, stack.apiToken, body);
      expect(res.status).toBe(422);
      expect(res.body.errors?.[0]?.field).toMatch(/webhook_url|events|token_mode|secret/);
    }
    expect((await send("GET", `${base}/webhooks`, stack.apiToken)).body.length).toBe(before);
  });

  it("update and delete a webhook; its deliveries go with it", async () => {
    const path = `/later-${unique("h")}`;
    const hook = await createWebhook(path, { events: ["ping"] });
    const res = await send("PATCH", `${base}/webhooks/${hook.id}`, stack.apiToken, {
      events: ["build.failing"],
      description: "on call",
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ events: ["build.failing"], description: "on call" });
    expect((await send("DELETE", `${base}/webhooks/${hook.id}`, stack.apiToken)).status).toBe(204);
    expect((await send("GET", `${base}/webhooks/${hook.id}`, stack.apiToken)).status).toBe(404);
    expect((await send("GET", `${base}/webhooks/${hook.id}/deliveries`, stack.apiToken)).status).toBe(404);
  });

  it("are managed with ci-admin webhook add, list, deliveries and remove", async () => {
    const ciAdmin = ciAdminJson;
    const path = `/cli-${unique("h")}`;
    const added = await ciAdmin(
      "webhook",
      "add",
      "--org",
      stack.orgSlug,
      "--url",
      receiver.url(path),
      "--events",
      "ping",
    );
    expect(added).toMatchObject({ webhook_url: receiver.url(path), events: ["ping"], token_mode: "token" });
    receiver.tokens.set(path, added.token);
    await eventually("the ping", () => receiver.at(path).some((r) => r.verified));
    const listed = await ciAdmin("webhook", "list", "--org", stack.orgSlug);
    expect(listed.find((w: { id: string }) => w.id === added.id)).not.toHaveProperty("token");
    await eventually("the delivery listed as succeeded", async () => {
      const [d] = await ciAdmin("webhook", "deliveries", "--org", stack.orgSlug, "--id", added.id);
      return d?.status === "succeeded";
    });
    expect(await ciAdmin("webhook", "remove", "--org", stack.orgSlug, "--id", added.id)).toEqual({
      id: added.id,
      removed: true,
    });
    expect((await send("GET", `${base}/webhooks/${added.id}`, stack.apiToken)).status).toBe(404);
  });
});
