import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { parseArgs } from "./args.js";
import { allFlags, COMMANDS, type CommandContext } from "./commands.js";

describe("oidc rotate-key", () => {
  it("rotates the signing key over the agents service and says when the new key signs", async () => {
    const calls: string[] = [];
    const ctx = {
      oidc: () => ({
        rotateOidcKey: async () => {
          calls.push("rotateOidcKey");
          return { keyId: "kid-2", signsFrom: timestampFromDate(new Date("2026-03-01T00:00:15Z")) };
        },
      }),
    } as unknown as CommandContext;
    const args = parseArgs(["oidc", "rotate-key"], allFlags());
    expect(await COMMANDS["oidc rotate-key"]?.run(args, ctx)).toEqual({
      key_id: "kid-2",
      signs_from: "2026-03-01T00:00:15.000Z",
    });
    expect(calls).toEqual(["rotateOidcKey"]);
  });
});
