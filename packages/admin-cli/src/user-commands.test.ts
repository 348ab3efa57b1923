import type { CommandContext } from "./commands.js";
import { USER_COMMANDS } from "./user-commands.js";

const ann = { id: "11111111-0000-4000-8000-000000000001", email: "ann@example.com", name: "Ann" };

/** A context whose identity knows Ann and records the calls it gets. */
function context() {
  const calls: Array<[string, unknown]> = [];
  const identity = {
    async getUser(req: unknown) {
      calls.push(["getUser", req]);
      return { user: ann };
    },
    async setPassword(req: unknown) {
      calls.push(["setPassword", req]);
      return {};
    },
    async createSignInLink(req: unknown) {
      calls.push(["createSignInLink", req]);
      return { secret: "cvl_abc", expiresAt: { seconds: BigInt(1_772_360_100), nanos: 0 } };
    },
  };
  const ctx = {
    identity: () => identity,
    webUrl: "https://ci.example.com",
    readPassword: async () => "correct horse battery",
  } as unknown as CommandContext;
  return { ctx, calls };
}

const run = (key: string, flags: Record<string, string | true>, ctx: CommandContext) =>
  USER_COMMANDS[key]?.run({ words: key.split(" "), flags }, ctx);

describe("user commands", () => {
  it("print a one-time sign-in link at the pages' address", async () => {
    const { ctx, calls } = context();
    expect(await run("user login-link", { email: "ann@example.com", minutes: "30" }, ctx)).toEqual({
      url: "https://ci.example.com/login/link/cvl_abc",
      user_id: ann.id,
      email: ann.email,
      expires_at: "2026-03-01T10:15:00.000Z",
    });
    expect(calls).toEqual([
      ["getUser", { email: "ann@example.com" }],
      ["createSignInLink", { userId: ann.id, validSeconds: 1800 }],
    ]);
  });

  it("set the password read from stdin, never one from the command line", async () => {
    const { ctx, calls } = context();
    expect(await run("user set-password", { user: ann.id }, ctx)).toEqual({
      user_id: ann.id,
      email: ann.email,
      password_set: true,
    });
    expect(calls.at(-1)).toEqual(["setPassword", { userId: ann.id, password: "correct horse battery" }]);
    expect(USER_COMMANDS["user set-password"]?.flags).not.toHaveProperty("password");
  });

  it.each([
    ["neither --email nor --user", {}, /--email or by --user/],
    ["both", { email: "ann@example.com", user: ann.id }, /--email or by --user/],
    ["--minutes 0", { email: "ann@example.com", minutes: "0" }, /1 to 1440/],
    ["--minutes 1441", { email: "ann@example.com", minutes: "1441" }, /1 to 1440/],
    ["--minutes soon", { email: "ann@example.com", minutes: "soon" }, /1 to 1440/],
  ])("refuse a login link with %s", async (_what, flags, message) => {
    const { ctx, calls } = context();
    await expect(run("user login-link", flags, ctx)).rejects.toThrow(message);
    expect(calls).toEqual([]);
  });
});
