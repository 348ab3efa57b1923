import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport, type ServiceImpl } from "@connectrpc/connect";
import { AgentsService } from "@conveyor/proto/agents";
import { callErrorValue } from "@conveyor/runtime";
import { batchHeartbeats } from "./batched-heartbeats.js";

const AT = new Date("2026-11-28T04:00:00.000Z");

/**
 * An agents service whose heartbeats answer AT for a live agent and Unauthenticated for "gone", recording every
 * HeartbeatAgents call and every lone HeartbeatAgent call; `batched: false` is one without HeartbeatAgents.
 */
function fakeAgents(opts: { batched?: boolean; failWith?: ConnectError } = {}) {
  const calls: string[][] = [];
  const alone: string[] = [];
  const heartbeat = (agentId: string) => {
    if (agentId === "gone") throw new ConnectError("gone", Code.Unauthenticated);
    return { receivedAt: timestampFromDate(AT) };
  };
  const impl: Partial<ServiceImpl<typeof AgentsService>> = {
    heartbeatAgent: (req) => {
      alone.push(req.agentId);
      return heartbeat(req.agentId);
    },
  };
  if (opts.batched !== false) {
    impl.heartbeatAgents = (req) => {
      calls.push(req.agentIds);
      if (opts.failWith) throw opts.failWith;
      return {
        results: req.agentIds.map((id) => {
          try {
            return { result: { case: "heartbeat" as const, value: heartbeat(id) } };
          } catch (err) {
            return { result: { case: "error" as const, value: callErrorValue(err) } };
          }
        }),
      };
    };
  }
  const client = createClient(
    AgentsService,
    createRouterTransport(({ service }) => service(AgentsService, impl)),
  );
  return { client, calls, alone };
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (err: unknown) => ConnectError.from(err).code,
  );

describe("batched heartbeats", () => {
  it("sends a lone heartbeat at once and those close behind it in one call, each answered as alone", async () => {
    const agents = fakeAgents();
    const client = batchHeartbeats(agents.client, { lingerMs: 1_000 });
    const started = Date.now();
    await client.heartbeatAgent({ agentId: "lone" });
    // Not held for the linger (a second).
    expect(Date.now() - started).toBeLessThan(500);
    expect(agents.calls).toEqual([["lone"]]);
    const answers = [client.heartbeatAgent({ agentId: "a" }), client.heartbeatAgent({ agentId: "gone" })];
    await new Promise((resolve) => setTimeout(resolve, 10));
    answers.push(client.heartbeatAgent({ agentId: "b" }));
    expect(agents.calls).toEqual([["lone"]]);
    const [a, gone, b] = await Promise.allSettled(answers);
    expect(agents.calls).toEqual([["lone"], ["a", "gone", "b"]]);
    expect(a?.status === "fulfilled" && a.value.receivedAt && timestampDate(a.value.receivedAt)).toEqual(AT);
    expect(b?.status === "fulfilled" && b.value.receivedAt && timestampDate(b.value.receivedAt)).toEqual(AT);
    expect(gone?.status === "rejected" && ConnectError.from(gone.reason).code).toBe(Code.Unauthenticated);
    expect(agents.alone).toEqual([]);
  });

  it("fails each heartbeat of a call that failed as a whole with its error", async () => {
    const agents = fakeAgents({ failWith: new ConnectError("down", Code.Unavailable) });
    const client = batchHeartbeats(agents.client, { lingerMs: 5 });
    const codes = await Promise.all([
      codeOf(client.heartbeatAgent({ agentId: "a" })),
      codeOf(client.heartbeatAgent({ agentId: "b" })),
    ]);
    expect(codes).toEqual([Code.Unavailable, Code.Unavailable]);
  });

  it("sends each heartbeat alone to an agents service without HeartbeatAgents", async () => {
    const agents = fakeAgents({ batched: false });
    const client = batchHeartbeats(agents.client, { lingerMs: 5 });
    const codes = await Promise.all([
      codeOf(client.heartbeatAgent({ agentId: "a" })),
      codeOf(client.heartbeatAgent({ agentId: "gone" })),
    ]);
    expect(codes).toEqual(["ok", Code.Unauthenticated]);
    expect(agents.alone).toEqual(["a", "gone"]);
  });

  it("leaves the other calls as they are", async () => {
    const agents = fakeAgents();
    const client = batchHeartbeats(agents.client, { lingerMs: 5 });
    expect(client.pingAgent).toBe(agents.client.pingAgent);
  });
});
