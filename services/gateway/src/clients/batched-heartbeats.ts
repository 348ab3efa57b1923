/**
 * The agents client with agents' heartbeats gathered: at most one HeartbeatAgents call starts per HEARTBEAT_LINGER_MS,
 * carrying the heartbeats this gateway received since the last (one arriving after a quiet spell goes at once). An agent heartbeats every 10 s whether it streams its pings or
 * polls, so 2,000 connected agents are 200 heartbeats a second; each its own call cost the gateway and the agents
 * service an HTTP/2 stream, headers and signals apiece (most of both processes' CPU with those agents idle:
 * `npm run bench`, streams row). Nothing is answered from here: each heartbeat is answered with what the agents
 * service said of it in a call that began after it arrived (its time, or its own error: Unauthenticated for an agent
 * that is gone), under load a fraction of a second later than alone, which an agent waiting 10 s between heartbeats does not
 * notice. A call that fails as a whole fails each of its heartbeats with that error; an agents service without
 * HeartbeatAgents (an older replica during a rolling upgrade) gets each heartbeat as its own call.
 */
import type { CallOptions } from "@connectrpc/connect";
import type { AgentsService, HeartbeatAgentResponse, HeartbeatResult } from "@conveyor/proto/agents";
import { type Client, callErrorFrom } from "@conveyor/runtime";
import { createBatchedCall } from "./batched-calls.js";

/** Heartbeats per HeartbeatAgents call at most (the service takes up to 500). */
const MAX_BATCH = 500;
/** Calls under way at once: a slow one (the database slow to answer) holds back only its own heartbeats. */
const CALLS_UNDER_WAY = 4;

/** `client` with heartbeatAgent going through HeartbeatAgents batches gathered over `lingerMs`; the rest as it is. */
export function batchHeartbeats(
  client: Client<typeof AgentsService>,
  opts: { lingerMs: number },
): Client<typeof AgentsService> {
  const call = createBatchedCall<string, HeartbeatResult["result"]>({
    name: "HeartbeatAgents",
    maxSize: MAX_BATCH,
    concurrency: CALLS_UNDER_WAY,
    lingerMs: opts.lingerMs,
    many: async (agentIds) => (await client.heartbeatAgents({ agentIds })).results.map((r) => r.result),
    // A heartbeat as its own call (a service without HeartbeatAgents).
    one: async (agentId) => ({ case: "heartbeat", value: await client.heartbeatAgent({ agentId }) }),
  });

  return {
    ...client,
    async heartbeatAgent(req: { agentId?: string }, _options?: CallOptions): Promise<HeartbeatAgentResponse> {
      const result = await call(req.agentId ?? "");
      if (result.case === "error") throw callErrorFrom(result.value);
      if (result.case !== "heartbeat") throw new Error("HeartbeatAgents answered a heartbeat with nothing");
      return result.value;
    },
  };
}
