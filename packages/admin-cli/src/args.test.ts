import { checkFlags, type FlagTypes, optionalFlag, parseArgs, requireFlag, UsageError } from "./args.js";

const KNOWN: FlagTypes = {
  name: "string",
  slug: "string",
  org: "string",
  description: "string",
  days: "string",
  "teams-enabled": "boolean",
  help: "boolean",
};

describe("parseArgs", () => {
  it("splits words and flags in both spellings", () => {
    expect(parseArgs(["org", "create", "--name", "Acme Inc", "--slug=acme", "--teams-enabled"], KNOWN)).toEqual({
      words: ["org", "create"],
      flags: { name: "Acme Inc", slug: "acme", "teams-enabled": true },
    });
  });

  it("takes flags before the command words, and the last of a repeated flag", () => {
    expect(parseArgs(["--org", "a", "cluster", "list", "--org", "b"], KNOWN)).toEqual({
      words: ["cluster", "list"],
      flags: { org: "b" },
    });
  });

  it("takes a value starting with one dash, as in a negative number", () => {
    expect(parseArgs(["artifacts", "retention", "set", "--days", "-1"], KNOWN).flags).toEqual({ days: "-1" });
  });

  it("leaves a flag followed by another flag without a value, and parses that next flag", () => {
    expect(parseArgs(["cluster", "create", "--description", "--org", "acme", "--name", "x"], KNOWN)).toEqual({
      words: ["cluster", "create"],
      flags: { description: true, org: "acme", name: "x" },
    });
  });

  it("reports missing and valueless flags as usage errors", () => {
    const args = parseArgs(["token", "create", "--orgs"], { orgs: "string", user: "string" });
    expect(() => requireFlag(args, "user")).toThrow(new UsageError("--user is required"));
    expect(() => optionalFlag(args, "orgs")).toThrow(/--orgs needs a value/);
  });

  it("treats a blank required value as missing", () => {
    expect(() => requireFlag(parseArgs(["--name", "  "], KNOWN), "name")).toThrow(new UsageError("--name is required"));
  });
});

describe("checkFlags", () => {
  const orgCreate: FlagTypes = { name: "string", slug: "string", "teams-enabled": "boolean", help: "boolean" };
  const check =
    (...argv: string[]) =>
    () =>
      checkFlags(parseArgs(argv, KNOWN), 2, orgCreate);

  it("accepts the command's own flags", () => {
    expect(check("org", "create", "--name", "Acme", "--teams-enabled")).not.toThrow();
  });

  it("refuses a flag the command does not take, known to another command or to none", () => {
    expect(check("org", "create", "--name", "Acme", "--org", "x")).toThrow(
      new UsageError("unknown flag --org for this command"),
    );
    expect(check("org", "create", "--nmae", "Acme")).toThrow(new UsageError("unknown flag --nmae for this command"));
    expect(check("org", "create", "-n", "Acme")).toThrow(new UsageError("unknown flag -n for this command"));
  });

  it("refuses a value given to a flag that takes none", () => {
    expect(check("org", "create", "--name", "Acme", "--teams-enabled=false")).toThrow(
      new UsageError("--teams-enabled takes no value"),
    );
  });

  it("refuses words after the command, such as a value whose flag was left out", () => {
    expect(check("org", "create", "Acme")).toThrow(/unexpected argument "Acme": every value follows its flag/);
    expect(check("org", "create", "--teams-enabled", "yes")).toThrow(/unexpected argument "yes"/);
  });
});
