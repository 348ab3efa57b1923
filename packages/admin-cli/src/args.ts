import { parseArgs as parseNodeArgs } from "node:util";

/** A parsed command line: the command words and its --flags. */
export interface CliArgs {
  words: string[];
  flags: Record<string, string | true>;
}

/** What a flag takes: a value (`--name NAME`, `--name=NAME`) or nothing (`--teams-enabled`). */
export type FlagType = "string" | "boolean";

/** The flags a command accepts, by name without the dashes. */
export type FlagTypes = Readonly<Record<string, FlagType>>;

/** A mistake in how the command was called; printed with the usage. */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * Splits argv into words and flags with node:util's parseArgs, given every flag any command knows: `--name value`,
 * `--name=value` and bare boolean `--flag` are accepted. Nothing is refused here (a flag may belong to a command not
 * yet known); `checkFlags` then holds the flags to the command that was named.
 */
export function parseArgs(argv: readonly string[], known: FlagTypes = {}): CliArgs {
  const options = Object.fromEntries(Object.entries(known).map(([name, type]) => [name, { type }]));
  const { tokens } = parseNodeArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const words: string[] = [];
  const flags: Record<string, string | true> = {};
  for (const token of tokens) {
    if (token.kind === "positional") words.push(token.value);
    if (token.kind !== "option") continue;
    if (token.inlineValue === false && token.value?.startsWith("--")) {
      // parseArgs took the next flag as this one's value (`--description --org acme`): this flag has no value
      // (`optionalFlag` and `requireFlag` say so), and the rest is parsed again from that next flag on.
      flags[token.name] = true;
      const rest = parseArgs(argv.slice(token.index + 1), known);
      return { words: [...words, ...rest.words], flags: { ...flags, ...rest.flags } };
    }
    // A flag given twice keeps its last value.
    flags[token.name] = token.value ?? true;
  }
  return { words, flags };
}

/**
 * Refuses what the named command would otherwise ignore: a flag it does not take, a value for a flag that takes none,
 * and words after the command.
 */
export function checkFlags(args: CliArgs, commandWords: number, accepted: FlagTypes): void {
  for (const [name, value] of Object.entries(args.flags)) {
    const type = accepted[name];
    const flag = name.length === 1 ? `-${name}` : `--${name}`;
    if (type === undefined) throw new UsageError(`unknown flag ${flag} for this command`);
    if (type === "boolean" && value !== true) throw new UsageError(`${flag} takes no value`);
  }
  const extra = args.words.slice(commandWords);
  if (extra.length > 0) {
    throw new UsageError(`unexpected argument "${extra[0]}": every value follows its flag, as the usage shows`);
  }
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
