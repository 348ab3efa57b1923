/**
 * The API access token RPCs: creating, revoking and authenticating a user's tokens.
 */

import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { type IdentityService, TokenRevokedSchema } from "@conveyor/proto/identity";
import { hashSecret, invalidFields, isUuid, newId, newSecret, notFound, SUBJECTS } from "@conveyor/runtime";
import { parseScopes } from "../domain/scopes.js";
import type { TokenDoc } from "../store/identity-repository.js";
import type { IdentityContext } from "./identity-context.js";
import { tokenMessage } from "./identity-message.js";
import { principalOf } from "./principal.js";
import { requireUser } from "./records.js";

/** Prefix of API access token secrets, as Buildkite's user access tokens have. */
export const ACCESS_TOKEN_PREFIX = "bkua_";

type AccessTokenRpcs = Pick<
  ServiceImpl<typeof IdentityService>,
  "createAccessToken" | "revokeAccessToken" | "authenticateAccessToken"
>;

/** API access tokens: scoped, optionally limited to some organizations, stored as hashes only. */
export function createAccessTokenRpcs(ctx: IdentityContext): AccessTokenRpcs {
  const { repo, events, now } = ctx;

  const unauthenticated = () => new ConnectError("invalid or revoked access token", Code.Unauthenticated);

  return {
    async createAccessToken(req) {
      const user = await requireUser(repo, req.userId);
      const { scopes, unknown } = parseScopes(req.scopes);
      const problems = [];
      if (unknown.length > 0) problems.push({ field: "scopes", code: `has unknown scopes: ${unknown.join(", ")}` });
      else if (scopes.length === 0) problems.push({ field: "scopes", code: "can't be blank" });
      const organizationIds: string[] = [];
      for (const ref of req.organizations.map((o) => o.trim()).filter((o) => o !== "")) {
        const org = isUuid(ref) ? await repo.findOrganization({ id: ref }) : await repo.findOrganization({ slug: ref });
        if (org) organizationIds.push(org._id);
        else problems.push({ field: "organizations", code: `has an unknown organization: ${ref}` });
      }
      if (problems.length > 0) throw invalidFields(problems);
      const secret = newSecret(ACCESS_TOKEN_PREFIX);
      const token: TokenDoc = {
        _id: newId(),
        hash: hashSecret(secret),
        userId: user._id,
        scopes,
        organizationIds: [...new Set(organizationIds)],
        description: req.description.trim(),
        createdAt: now(),
        revokedAt: null,
      };
      await repo.insertToken(token);
      return { token: tokenMessage(token), secret };
    },

    async revokeAccessToken(req) {
      const found =
        req.secret !== ""
          ? await repo.findTokenByHash(hashSecret(req.secret))
          : isUuid(req.id)
            ? await repo.findToken(req.id)
            : null;
      if (!found) throw notFound("access token");
      const revoked = (await repo.revokeToken(found._id, now())) ?? found;
      await events.publish(SUBJECTS.identity.tokenRevoked, TokenRevokedSchema, {
        tokenId: revoked._id,
        userId: revoked.userId,
      });
      return { token: tokenMessage(revoked) };
    },

    async authenticateAccessToken(req) {
      if (req.secret === "") throw unauthenticated();
      const token = await repo.findTokenByHash(hashSecret(req.secret));
      if (!token || token.revokedAt) throw unauthenticated();
      const user = await repo.findUser(token.userId);
      if (!user) throw unauthenticated();
      return { principal: await principalOf(repo, user, tokenMessage(token), token.organizationIds) };
    },
  };
}
