import { isoTime } from "@conveyor/runtime";
import type { CommandSpec } from "./commands.js";

/**
 * The OIDC signing key command (docs/security.md#signing-keys-and-rotation): `oidc rotate-key` makes a new key, which
 * signs jobs' tokens 15 s later; the previous key stays in the key set until the tokens it signed have expired.
 */
export const OIDC_COMMANDS: Record<string, CommandSpec> = {
  "oidc rotate-key": {
    usage: "oidc rotate-key",
    flags: {},
    run: async (_args, ctx) => {
      const { keyId, signsFrom } = await ctx.oidc().rotateOidcKey({});
      return { key_id: keyId, signs_from: isoTime(signsFrom) };
    },
  },
};
