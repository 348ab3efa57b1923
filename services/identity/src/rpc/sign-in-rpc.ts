/**
 * The sign-in RPCs (docs/pages.md#signing-in): with an email and password, failures limited per account and per
 * client address with no hint whether an account exists; and with a one-time link an operator made.
 */

import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { IdentityService } from "@conveyor/proto/identity";
import { hashSecret, invalidFields, newId, newSecret, toTimestamp } from "@conveyor/runtime";
import { dummyHash, verifyPassword } from "../domain/password.js";
import { linkValidity } from "../domain/session-lifetime.js";
import { exceededLimit, failureWindow, limitKey, limitMessage } from "../domain/sign-in-limits.js";
import { requireUser } from "./records.js";
import { SIGN_IN_LINK_PREFIX, type SignInContext } from "./sign-in-context.js";

type SignInRpcs = Pick<
  ServiceImpl<typeof IdentityService>,
  "signInWithPassword" | "createSignInLink" | "signInWithLink"
>;

/** The one answer to a wrong password, an unknown email and a user without a password alike. */
export const WRONG_CREDENTIALS = "The email address or password is wrong";

/** The answer to a sign-in link that cannot be used. */
export const UNUSABLE_LINK = "This sign-in link has been used already, has expired or is not known";

/** Signing in with a password or a one-time link; each starts a session. */
export function createSignInRpcs(ctx: SignInContext): SignInRpcs {
  const { repo, sessions, passwords, failures, now, settings } = ctx;

  return {
    async signInWithPassword(req) {
      await ctx.sweep();
      const email = req.email.trim().toLowerCase();
      const window = failureWindow(now(), settings.limits.windowMs);
      const keys = [limitKey("account", email), limitKey("address", req.clientAddress)] as const;
      // Every attempt counts before its password is checked, and a success takes its count back: concurrent
      // attempts cannot all pass the check before any of them is counted.
      const [account, address] = await Promise.all(keys.map((key) => failures.add(key, window, 1)));
      const exceeded = exceededLimit({ account: account ?? 0, address: address ?? 0 }, settings.limits);
      if (exceeded) throw new ConnectError(limitMessage(exceeded, window.end), Code.ResourceExhausted);
      // An unknown email does the same reads and the same scrypt work as a known one (against a hash of no one's
      // password), so that neither the answer nor its time tells whether the account exists.
      const user = await repo.findUserByEmail(email);
      const stored = await passwords.find(user?._id ?? "");
      const matches = await verifyPassword(req.password, stored?.hash ?? (await dummyHash(settings.passwordCost)));
      if (!user || !stored || !matches) throw new ConnectError(WRONG_CREDENTIALS, Code.Unauthenticated);
      await Promise.all(keys.map((key) => failures.add(key, window, -1)));
      return ctx.startSession(user._id);
    },

    async createSignInLink(req) {
      const user = await requireUser(repo, req.userId);
      const validity = linkValidity(req.validSeconds);
      if ("problem" in validity) throw invalidFields([{ field: "valid_seconds", code: validity.problem }]);
      await ctx.sweep();
      const at = now();
      const secret = newSecret(SIGN_IN_LINK_PREFIX);
      const expiresAt = new Date(at.getTime() + validity.seconds * 1000);
      await sessions.insertLink({
        _id: newId(),
        hash: hashSecret(secret),
        userId: user._id,
        createdAt: at,
        expiresAt,
        usedAt: null,
      });
      return { secret, expiresAt: toTimestamp(expiresAt) };
    },

    async signInWithLink(req) {
      const link = req.secret === "" ? null : await sessions.useLink(hashSecret(req.secret), now());
      const user = link && (await repo.findUser(link.userId));
      if (!user) throw new ConnectError(UNUSABLE_LINK, Code.Unauthenticated);
      return ctx.startSession(user._id);
    },
  };
}
