import { Type } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { organizationAccess } from "../auth/authenticate.js";
import { HttpError } from "../errors/http-error.js";
import type { RateLimiter } from "../rate-limit/rate-limiter.js";
import { renderUser, UserSchema } from "../render/user.js";
import { responses, typed } from "../route-declarations/declare.js";
import { OrgParams } from "../route-declarations/params.js";
import { PagingQuery } from "./paging.js";

const RestLimitSchema = Type.Object({
  limit: Type.Integer(),
  current: Type.Integer(),
  reset: Type.Integer({ description: "seconds until the window resets" }),
  reset_at: Type.String({ format: "date-time" }),
  enforced: Type.Boolean(),
});
const RateLimitSchema = Type.Object({ scopes: Type.Object({ rest: RestLimitSchema }) });
const EmojiSchema = Type.Object({ name: Type.String(), url: Type.String() });

/**
 * What a caller asks about themselves and their organization (docs/compatibility.md#organizations-members-and-the-token):
 * `GET /v2/user` (the token's user), `GET …/rate_limit` (the organization's current REST window, as this gateway
 * and its peers count it; docs/architecture.md#rate-limit-sharing) and `GET …/emojis` (no custom emojis: an empty
 * list).
 */
export function accountRoutes(app: FastifyInstance, limiter: RateLimiter | undefined): void {
  typed(app).get(
    "/v2/user",
    {
      config: { scope: "read_user" },
      schema: {
        operationId: "getCurrentUser",
        summary: "The user the calling token belongs to",
        tags: ["user"],
        response: responses(200, UserSchema),
      },
    },
    async (request) => {
      const user = request.principal?.user;
      if (!user) throw new HttpError(404, "No user found");
      return renderUser(user);
    },
  );

  typed(app).get(
    "/v2/organizations/:org/rate_limit",
    {
      config: { scope: "read_accounts" },
      schema: {
        operationId: "getRateLimit",
        summary: "The organization's REST rate limit: its current window",
        tags: ["organizations"],
        params: OrgParams,
        response: responses(200, RateLimitSchema),
      },
    },
    async (request) => {
      const organization = organizationAccess(request, request.params.org).organization;
      const now = Date.now();
      if (!limiter) {
        // RATE_LIMIT_PER_MINUTE=0: nothing is counted or refused.
        const next = new Date(Math.floor(now / 60_000) * 60_000 + 60_000);
        const reset = Math.ceil((next.getTime() - now) / 1000);
        return {
          scopes: { rest: { limit: 0, current: 0, reset, reset_at: next.toISOString(), enforced: false } },
        };
      }
      // The same key this request was counted against (rate-limit/rate-limit-hook.ts), so it counts itself.
      const d = limiter.peek(`org:${organization?.id ?? ""}`);
      const rest = {
        limit: d.limit,
        current: d.current,
        reset: d.reset,
        reset_at: new Date(d.resetAt).toISOString(),
        enforced: true,
      };
      return { scopes: { rest } };
    },
  );

  typed(app).get(
    "/v2/organizations/:org/emojis",
    {
      config: { scope: null },
      schema: {
        operationId: "listEmojis",
        summary: "The organization's custom emojis: none (an empty list)",
        tags: ["organizations"],
        params: OrgParams,
        // Taken as every list takes them; there is never a second page.
        querystring: PagingQuery,
        response: responses(200, Type.Array(EmojiSchema)),
      },
    },
    async (request) => {
      organizationAccess(request, request.params.org);
      return [];
    },
  );
}
