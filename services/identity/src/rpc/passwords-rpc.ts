/**
 * The password RPC (docs/pages.md#signing-in): setting a user's password, which ends every session the user has.
 */

import type { ServiceImpl } from "@connectrpc/connect";
import type { IdentityService } from "@conveyor/proto/identity";
import { invalidFields } from "@conveyor/runtime";
import { hashPassword, passwordProblem } from "../domain/password.js";
import { requireUser } from "./records.js";
import type { SignInContext } from "./sign-in-context.js";

type PasswordRpcs = Pick<ServiceImpl<typeof IdentityService>, "setPassword">;

/** Passwords: checked against the rule, stored as a salted scrypt hash, never returned. */
export function createPasswordRpcs(ctx: SignInContext): PasswordRpcs {
  const { repo, passwords, now, settings } = ctx;

  return {
    async setPassword(req) {
      const user = await requireUser(repo, req.userId);
      const problem = passwordProblem(req.password);
      if (problem) throw invalidFields([{ field: "password", code: problem }]);
      await passwords.set(user._id, await hashPassword(req.password, settings.passwordCost), now());
      // Whoever knew the old password may be signed in with it: a new password ends every session.
      await ctx.endUserSessions(user._id);
      return {};
    },
  };
}
