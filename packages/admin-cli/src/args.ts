/** A parsed command line: the command words and its --flags. */
export interface CliArgs {
  words: string[];
  flags: Record<string, string | true>;
}

/** A mistake in how the command was called; printed with the usage. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Splits argv into words and flags; `--name value`, `--name=value` and bare boolean `--flag` are accepted. */
export function parseArgs(argv: readonly string[]): CliArgs {
  const words: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (!arg.startsWith("--")) {
      words.push(arg);
      continue;
    }
    const body = arg.slice(2);
    const eq = body.indexOf("=");
    if (eq >= 0) {
      flags[body.slice(0, eq)] = body.slice(eq + 1);
    } else if (i + 1 < argv.length && !(argv[i + 1] ?? "").startsWith("--")) {
      flags[body] = argv[++i] ?? "";
    } else {
      flags[body] = true;
    }
  }
  return { words, flags };
}

/** The value of a required flag, or a UsageError naming it. */
export function requireFlag(args: CliArgs, name: string): string {
  const value = args.flags[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value;
}

/** The value of an optional flag. */
export function optionalFlag(args: CliArgs, name: string): string | undefined {
  const value = args.flags[name];
  if (value === true) throw new UsageError(`--${name} needs a value`);
  return value;
}
