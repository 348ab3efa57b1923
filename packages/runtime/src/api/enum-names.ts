/**
 * A proto enum's values and the names the REST API, the database and the model give them, both ways: one table per
 * enum (team-names.ts, step-codec.ts), so that every process spells them the same. UNSPECIFIED has no name.
 */

/** A proto enum's named values, both ways. */
export interface EnumNames<E extends number, N extends string> {
  /** Every name, in the order the API documents them. */
  readonly names: readonly N[];
  /** The name of a value; undefined for UNSPECIFIED (or a value the table does not know). */
  nameOf(value: E): N | undefined;
  /** The value a name stands for; UNSPECIFIED for anything else (the caller refuses it with its own reason). */
  valueOf(name: unknown): E;
}

/** The names of a proto enum's values, from a table of name to value (UNSPECIFIED has no name). */
export function enumNames<E extends number, N extends string>(unspecified: E, table: Record<N, E>): EnumNames<E, N> {
  const names = Object.keys(table) as N[];
  const byValue = new Map<E, N>(names.map((name) => [table[name], name]));
  return {
    names,
    nameOf: (value) => byValue.get(value),
    valueOf: (name) => (typeof name === "string" && Object.hasOwn(table, name) ? table[name as N] : unspecified),
  };
}
