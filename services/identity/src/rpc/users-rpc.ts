/**
 * The user RPCs: creating a user and reading one back by id or email address.
 */

import type { ServiceImpl } from "@connectrpc/connect";
import { type IdentityService, UserCreatedSchema } from "@conveyor/proto/identity";
import { alreadyExists, invalidFields, newId, notFound, SUBJECTS } from "@conveyor/runtime";
import { DuplicateError, type UserDoc } from "../store/identity-repository.js";
import type { IdentityContext } from "./identity-context.js";
import { userMessage } from "./identity-message.js";
import { requireUser } from "./records.js";

const EMAIL_RE = /^[^\s@]+@[^\s@]+$/;

type UserRpcs = Pick<ServiceImpl<typeof IdentityService>, "createUser" | "getUser">;

/** Users: a name and an email address unique regardless of case. */
export function createUserRpcs(ctx: IdentityContext): UserRpcs {
  const { repo, events, now } = ctx;

  return {
    async createUser(req) {
      const name = req.name.trim();
      const email = req.email.trim().toLowerCase();
      const problems = [];
      if (name === "") problems.push({ field: "name", code: "can't be blank" });
      if (!EMAIL_RE.test(email)) problems.push({ field: "email", code: "is not a valid email address" });
      if (problems.length > 0) throw invalidFields(problems);
      const user: UserDoc = { _id: newId(), name, email, avatarUrl: null, createdAt: now() };
      try {
        await repo.insertUser(user);
      } catch (err) {
        if (err instanceof DuplicateError) throw alreadyExists("email", "has already been taken", err);
        throw err;
      }
      await events.publish(SUBJECTS.identity.userCreated, UserCreatedSchema, { user: userMessage(user) });
      return { user: userMessage(user) };
    },

    async getUser(req) {
      if (req.email === "") return { user: userMessage(await requireUser(repo, req.id)) };
      const user = await repo.findUserByEmail(req.email.trim().toLowerCase());
      if (!user || req.id !== "") throw notFound("user");
      return { user: userMessage(user) };
    },
  };
}
