import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { Str } from "../render/schemas.js";
import { responses, typed } from "../route-declarations/declare.js";
import { text } from "../route-declarations/params.js";
import type { AgentApiDeps } from "./agent-api.js";
import { credentialOf } from "./agent-credentials.js";
import { AgentJobParams } from "./job-routes.js";

const tags = ["agent"];

/**
 * `buildkite-agent secret get KEY` (docs/compatibility.md#cluster-secrets): `GET /v3/jobs/{id}/secrets?key=KEY`, one
 * key per request (the agent asks for several keys one by one), answered `{key, value, uuid}`. Only a job's own
 * token reads, only while the job runs, only a secret of the job's cluster whose access policy allows the job's
 * pipeline and branch; the agents service records every read, allowed or refused. A refusal is 422 with a message
 * the agent prints (`secret "KEY": GET …: 422 Unprocessable Entity: …`); a key the cluster does not have is 404.
 * The agent registers the value with its log redactor itself before printing it.
 */
export function secretAgentRoutes(app: FastifyInstance, deps: AgentApiDeps): void {
  const { clients, jobAccess } = deps;
  typed(app).get(
    "/v3/jobs/:id/secrets",
    {
      config: { credential: ["job"] },
      schema: {
        operationId: "agentGetSecret",
        summary: "Read a secret of the job's cluster (a running job's own token, within the secret's access policy)",
        tags,
        params: AgentJobParams,
        querystring: Type.Object({ key: text(255, { minLength: 1 }) }),
        response: responses(200, Type.Object({ key: Str, value: Str, uuid: Str })),
      },
    },
    async (request) => {
      const { jobId, agentId } = await jobAccess.job(request, request.params.id);
      const secret = await clients.secrets.readJobSecret({
        organizationId: credentialOf(request).organizationId,
        jobId,
        agentId,
        key: request.query.key,
      });
      return { key: secret.key, value: secret.value, uuid: secret.id };
    },
  );
}
