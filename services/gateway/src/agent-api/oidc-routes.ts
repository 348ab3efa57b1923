import { Code, ConnectError } from "@connectrpc/connect";
import { fieldErrorsOf } from "@conveyor/runtime";
import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { Str } from "../render/schemas.js";
import { responses, typed } from "../route-declarations/declare.js";
import { MAX_INT32, text } from "../route-declarations/params.js";
import { onlyFields } from "../route-declarations/unknown-fields.js";
import type { AgentApiDeps } from "./agent-api.js";
import { credentialOf } from "./agent-credentials.js";
import { AgentJobParams } from "./job-routes.js";

const tags = ["agent"];

/**
 * A request that cannot be met is 422 with its problems in `message` too, the only part the agent prints
 * (`POST …/oidc/tokens: 422 Unprocessable Entity: <message>`).
 */
function sayWhy(err: unknown): never {
  const error = ConnectError.from(err);
  if (error.code !== Code.InvalidArgument) throw err;
  const errors = fieldErrorsOf(error);
  const message = `The OIDC token could not be issued: ${errors.map((e) => `${e.field} ${e.code}`).join("; ") || error.rawMessage}`;
  throw new HttpError(422, message, { message, errors });
}

/** Bounds of a request; the agents service checks the names and the lifetime against OIDC_MAX_TOKEN_LIFETIME_S. */
const ClaimNames = Type.Array(text(128, { minLength: 1 }), { maxItems: 32 });

/** What `buildkite-agent oidc request-token` sends (the agent leaves out what was not given). */
const TokenBody = Type.Object({
  audience: Type.Optional(text(1000)),
  lifetime: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_INT32 })),
  claims: Type.Optional(ClaimNames),
  aws_session_tags: Type.Optional(ClaimNames),
  subject_claim: Type.Optional(text(128)),
});

/**
 * `buildkite-agent oidc request-token` (docs/security.md#oidc-tokens): `POST /v3/jobs/{id}/oidc/tokens` with the
 * running job's own token, answered `{token}`, a JWT the agents service signs with Buildkite's claims. Without an
 * audience the token's `aud` is the organization's URL, as Buildkite's default audience is. A job that is not
 * running is 422; another job, or another organization's, is 404.
 */
export function oidcAgentRoutes(app: FastifyInstance, deps: AgentApiDeps, opts: { issuer: string }): void {
  const { clients, jobAccess, organizations, urls } = deps;
  typed(app).post(
    "/v3/jobs/:id/oidc/tokens",
    {
      config: { credential: ["job"] },
      // A field the agent does not send is refused by name, never ignored.
      preValidation: onlyFields(Object.keys(TokenBody.properties)),
      schema: {
        operationId: "agentRequestOidcToken",
        summary: "Sign an OIDC token for the running job (its own token)",
        tags,
        params: AgentJobParams,
        body: TokenBody,
        response: responses(200, Type.Object({ token: Str })),
      },
    },
    async (request) => {
      const { jobId, agentId } = await jobAccess.job(request, request.params.id);
      const organization = await organizations.get(credentialOf(request).organizationId);
      const slug = organization?.slug ?? "";
      const body = request.body;
      const { token } = await clients.oidc
        .issueOidcToken({
          issuer: opts.issuer,
          jobId,
          agentId,
          organizationSlug: slug,
          audience: body.audience || urls.web(slug),
          lifetimeSeconds: body.lifetime ?? 0,
          claims: body.claims ?? [],
          awsSessionTags: body.aws_session_tags ?? [],
          subjectClaim: body.subject_claim ?? "",
        })
        .catch(sayWhy);
      return { token };
    },
  );
}
