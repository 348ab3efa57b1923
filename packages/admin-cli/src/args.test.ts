import { optionalFlag, parseArgs, requireFlag, UsageError } from "./args.js";

describe("parseArgs", () => {
  it("splits words and flags in both spellings", () => {
    expect(parseArgs(["org", "create", "--name", "Acme Inc", "--slug=acme", "--teams-enabled"])).toEqual({
      words: ["org", "create"],
      flags: { name: "Acme Inc", slug: "acme", "teams-enabled": true },
    });
  });

  it("reports missing and valueless flags as usage errors", () => {
    const args = parseArgs(["token", "create", "--orgs"]);
    expect(() => requireFlag(args, "user")).toThrow(new UsageError("--user is required"));
    expect(() => optionalFlag(args, "orgs")).toThrow(/--orgs needs a value/);
  });
});
