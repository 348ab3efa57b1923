import type { User } from "@conveyor/proto/identity";
import { isoTime } from "@conveyor/runtime";
import { type CliArgs, optionalFlag, requireFlag, UsageError } from "./args.js";
import type { CommandContext, CommandSpec } from "./commands.js";

/** The user a command names by --email or --user (exactly one), as identity has it. */
async function namedUser(args: CliArgs, ctx: CommandContext): Promise<User> {
  const id = optionalFlag(args, "user");
  const email = optionalFlag(args, "email");
  if ((id === undefined) === (email === undefined)) throw new UsageError("give the user by --email or by --user");
  const { user } = await ctx.identity().getUser(id !== undefined ? { id } : { email });
  if (!user) throw new UsageError("identity returned no user");
  return user;
}

/** Minutes a sign-in link is valid: 1 to 1440 (a day), 15 when not given. */
function linkMinutes(args: CliArgs): number {
  const raw = optionalFlag(args, "minutes");
  if (raw === undefined) return 15;
  if (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > 1440) {
    throw new UsageError("--minutes must be a whole number of minutes from 1 to 1440");
  }
  return Number(raw);
}

/** The user commands: creating users, and what lets a person sign in to the pages (docs/pages.md#signing-in). */
export const USER_COMMANDS: Record<string, CommandSpec> = {
  "user create": {
    usage: "user create --name NAME --email EMAIL",
    flags: { name: "string", email: "string" },
    async run(args, ctx) {
      const { user: u } = await ctx
        .identity()
        .createUser({ name: requireFlag(args, "name"), email: requireFlag(args, "email") });
      return u && { id: u.id, name: u.name, email: u.email, created_at: isoTime(u.createdAt) };
    },
  },
  "user set-password": {
    usage:
      "user set-password --email EMAIL | --user USER_ID   (reads the password from stdin; ends the user's sessions)",
    flags: { email: "string", user: "string" },
    async run(args, ctx) {
      const user = await namedUser(args, ctx);
      await ctx.identity().setPassword({ userId: user.id, password: await ctx.readPassword() });
      return { user_id: user.id, email: user.email, password_set: true };
    },
  },
  "user login-link": {
    usage: "user login-link --email EMAIL | --user USER_ID [--minutes N]   (a one-time sign-in link; 15 minutes)",
    flags: { email: "string", user: "string", minutes: "string" },
    async run(args, ctx) {
      const minutes = linkMinutes(args);
      const user = await namedUser(args, ctx);
      const { secret, expiresAt } = await ctx
        .identity()
        .createSignInLink({ userId: user.id, validSeconds: minutes * 60 });
      return {
        url: `${ctx.webUrl}/login/link/${secret}`,
        user_id: user.id,
        email: user.email,
        expires_at: isoTime(expiresAt),
      };
    },
  },
  "user sign-out": {
    usage: "user sign-out --email EMAIL | --user USER_ID   (ends every session of the user on the pages)",
    flags: { email: "string", user: "string" },
    async run(args, ctx) {
      const user = await namedUser(args, ctx);
      const { ended } = await ctx.identity().endUserSessions({ userId: user.id });
      return { user_id: user.id, email: user.email, sessions_ended: ended };
    },
  },
};
