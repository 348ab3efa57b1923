import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { responses, typed } from "../route-declarations/declare.js";
import { MAX_INT32, text } from "../route-declarations/params.js";
import type { AgentApiDeps } from "./agent-api.js";
import { credentialOf } from "./agent-credentials.js";
import { Empty } from "./agent-routes.js";

const PauseBody = Type.Object({
  note: Type.Optional(text(1000)),
  timeout_in_minutes: Type.Optional(Type.Integer({ minimum: -MAX_INT32 - 1, maximum: MAX_INT32 })),
});
const StopBody = Type.Object({ force: Type.Optional(Type.Boolean()) });
const tags = ["agent"];

/**
 * `buildkite-agent pause`, `resume` and `stop` run inside a job (docs/compatibility.md#agent-endpoints): they act on the agent
 * running that job, named by the job's credential (or the agent's own). A paused agent finishes its job and takes
 * no other until resumed or its pause times out; a stopped one finishes its job (cancels it with `--force`) and
 * disconnects. The agent ignores the bodies of these answers.
 */
export function agentControlRoutes(app: FastifyInstance, deps: AgentApiDeps): void {
  const { clients } = deps;
  const config = { credential: ["job", "agent"] } as const;

  const route = typed(app);

  route.post(
    "/v3/pause",
    {
      config,
      schema: {
        operationId: "agentPauseSelf",
        summary: "Pause the agent running the job",
        tags,
        body: PauseBody,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      const { organizationId, agentId } = credentialOf(request);
      await clients.agents.pauseAgent({
        organizationId,
        id: agentId,
        note: request.body.note ?? "",
        // The agent leaves out a zero timeout: absent takes the default.
        ...(request.body.timeout_in_minutes ? { timeoutInMinutes: request.body.timeout_in_minutes } : {}),
      });
      return {};
    },
  );

  route.post(
    "/v3/resume",
    {
      config,
      schema: { operationId: "agentResumeSelf", summary: "Resume the agent", tags, response: responses(200, Empty) },
    },
    async (request) => {
      const { organizationId, agentId } = credentialOf(request);
      await clients.agents.resumeAgent({ organizationId, id: agentId });
      return {};
    },
  );

  route.post(
    "/v3/stop",
    {
      config,
      schema: {
        operationId: "agentStopSelf",
        summary: "Stop the agent running the job",
        tags,
        body: StopBody,
        response: responses(200, Empty),
      },
    },
    async (request) => {
      const { organizationId, agentId } = credentialOf(request);
      await clients.agents.stopAgent({ organizationId, id: agentId, force: request.body.force ?? false });
      return {};
    },
  );
}
