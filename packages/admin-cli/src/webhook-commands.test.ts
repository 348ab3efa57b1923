import { parseArgs } from "./args.js";
import { allFlags, type CommandContext } from "./commands.js";
import { WEBHOOK_COMMANDS } from "./webhook-commands.js";

const webhook = {
  id: "w-1",
  url: "https://hooks.example/ci",
  events: ["build.finished", "ping"],
  pipelineIds: ["p-1"],
  tokenMode: "signature",
  description: "",
  createdAt: { seconds: BigInt(1_772_409_600), nanos: 0 },
};
const delivery = {
  id: "d-1",
  event: "ping",
  status: "failed",
  attempts: 1,
  responseCode: 0,
  error: "127.0.0.1 is a loopback address",
  durationMs: 3,
  createdAt: { seconds: BigInt(1_772_409_600), nanos: 0 },
};

/** A context whose identity knows acme, whose pipelines know "web", and whose notifications record their calls. */
function context() {
  const calls: Array<[string, unknown]> = [];
  const record = (name: string, answer: unknown) => async (req: unknown) => {
    calls.push([name, req]);
    return answer;
  };
  const ctx = {
    identity: () => ({ getOrganization: async () => ({ organization: { id: "o-1", slug: "acme" } }) }),
    pipelines: () => ({
      getPipeline: async (req: { pipeline: string }) => ({
        pipeline: req.pipeline === "web" ? { id: "p-1" } : undefined,
      }),
    }),
    notifications: () => ({
      createWebhook: record("createWebhook", { webhook, token: "t0k3n" }),
      listWebhooks: record("listWebhooks", { webhooks: [webhook] }),
      deleteWebhook: record("deleteWebhook", {}),
      listWebhookDeliveries: record("listWebhookDeliveries", { deliveries: [delivery] }),
    }),
  } as unknown as CommandContext;
  return { ctx, calls };
}

const run = (line: string, ctx: CommandContext) => {
  const args = parseArgs(line.split(" "), allFlags());
  const command = WEBHOOK_COMMANDS[args.words.slice(0, 2).join(" ")];
  if (!command) throw new Error(`no command ${line}`);
  return command.run(args, ctx);
};

describe("the webhook commands", () => {
  it("add a webhook with its events, pipelines by slug and signature, printing the token once", async () => {
    const { ctx, calls } = context();
    const out = await run(
      "webhook add --org acme --url https://hooks.example/ci --events build.finished,ping --pipelines web --signature",
      ctx,
    );
    expect(calls).toEqual([
      [
        "createWebhook",
        {
          organizationId: "o-1",
          webhook: {
            url: "https://hooks.example/ci",
            events: ["build.finished", "ping"],
            pipelineIds: ["p-1"],
            tokenMode: "signature",
            description: "",
          },
        },
      ],
    ]);
    expect(out).toMatchObject({ id: "w-1", token: "t0k3n", token_mode: "signature", description: null });
  });

  it("refuse a pipeline the organization does not have", async () => {
    const { ctx } = context();
    await expect(run("webhook add --org acme --url https://x --events ping --pipelines nope", ctx)).rejects.toThrow(
      "no pipeline nope",
    );
  });

  it("list without tokens, remove, and show deliveries", async () => {
    const { ctx, calls } = context();
    const list = (await run("webhook list --org acme", ctx)) as unknown[];
    expect(list).toEqual([
      {
        id: "w-1",
        webhook_url: "https://hooks.example/ci",
        events: ["build.finished", "ping"],
        pipeline_ids: ["p-1"],
        token_mode: "signature",
        description: null,
        created_at: "2026-03-02T00:00:00.000Z",
      },
    ]);
    expect(await run("webhook remove --org acme --id w-1", ctx)).toEqual({ id: "w-1", removed: true });
    const deliveries = (await run("webhook deliveries --org acme --id w-1", ctx)) as unknown[];
    expect(deliveries[0]).toMatchObject({ id: "d-1", status: "failed", response_code: null, error: delivery.error });
    expect(calls.map(([name]) => name)).toEqual(["listWebhooks", "deleteWebhook", "listWebhookDeliveries"]);
  });
});
