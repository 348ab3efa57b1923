import fc from "fast-check";

/** The JSON Schema subset the gateway's TypeBox declarations produce (the OpenAPI document's dialect). */
export interface JsonSchema {
  type?: string | string[];
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  pattern?: string;
  [k: string]: unknown;
}

/** The largest string the fuzzer sends in one field: 100 KB. */
export const HUGE = 100_000;

/** Strings that break naive handling: empty, blanks, control characters and NUL, unicode, lone surrogates, markup. */
export const NASTY_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\u0001\u0002\u001b[31m\u007f",
  "\r\n\t",
  "\ud800",
  "\udfff\ud800",
  "\u202eevil",
  "\ufeff",
  "😀👨‍👩‍👧‍👦",
  "日本語のパイプライン",
  "Z̸̡̛̛a̷l̶g̵o̴",
  "..",
  "../../etc/passwd",
  "%00",
  "%2e%2e%2f",
  "$where",
  '{"$gt":""}',
  "<script>alert(1)</script>",
  "'; DROP TABLE x; --",
  "NaN",
  "Infinity",
  "-1",
  "0",
  "1e309",
  "2147483648",
  "9007199254740993",
  "true",
  "null",
];

/** Numbers at the edges: zero, negatives, 32- and 53-bit limits, fractions, huge and tiny magnitudes. */
export const BOUNDARY_NUMBERS = [
  0,
  -0,
  -1,
  1,
  0.5,
  -0.5,
  2 ** 31 - 1,
  2 ** 31,
  -(2 ** 31),
  -(2 ** 31) - 1,
  2 ** 32,
  2 ** 53 - 1,
  2 ** 53 + 1,
  -(2 ** 53) - 1,
  1e308,
  -1e308,
  5e-324,
];

/** A value nested `depth` levels deep, in arrays or objects. */
export function nested(depth: number, kind: "array" | "object"): unknown {
  let value: unknown = "bottom";
  for (let i = 0; i < depth; i++) value = kind === "array" ? [value] : { a: value };
  return value;
}

const hugeString = fc
  .tuple(fc.constantFrom("x", "é", "😀", "\u0000", "\ud800"), fc.constantFrom(HUGE / 10, HUGE / 2))
  .map(([ch, n]) => ch.repeat(Math.floor(n / ch.length)));

/** A value of the wrong shape for almost any field: nasty strings and numbers, other types, deep nesting. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 3, arbitrary: fc.constantFrom(...BOUNDARY_NUMBERS) },
  { weight: 2, arbitrary: fc.constantFrom<unknown>(true, false, null, [], {}, [null], { "": "" }, [[[]]]) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 1, arbitrary: hugeString },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(50, 101, 200, 1000), fc.constantFrom<"array" | "object">("array", "object"))
      .map(([d, k]) => nested(d, k)),
  },
);

let hints: Record<string, readonly unknown[]> = {};

/**
 * Values to offer for properties by name (a real cluster_id, pipeline_id, a known rule type), beside generated
 * ones: without them almost every generated write names nothing and never reaches the backend's deeper checks.
 */
export function useHints(byName: Record<string, readonly unknown[]>): void {
  hints = byName;
}

function typesOf(schema: JsonSchema): string[] {
  if (schema.type === undefined) return [];
  return [schema.type].flat();
}

/** A string within the schema's length bounds, usually short, sometimes unicode. */
function stringOf(schema: JsonSchema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 40, Math.max(min, 40));
  const plain = fc.string({ minLength: min, maxLength: max });
  const unicode = fc.string({ unit: "grapheme", minLength: min, maxLength: max });
  const atBound =
    schema.maxLength !== undefined && schema.maxLength <= HUGE ? [fc.constant("y".repeat(schema.maxLength))] : [];
  return fc.oneof(plain, plain, unicode, ...atBound);
}

function numberOf(schema: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const min = schema.minimum ?? (integer ? -(2 ** 31) : -1e9);
  const max = schema.maximum ?? (integer ? 2 ** 31 - 1 : 1e9);
  const inside = integer ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
  return fc.oneof(inside, fc.constantFrom(min, max, Math.min(Math.max(0, min), max)));
}

/**
 * Values that (mostly) satisfy a schema: every required property, some optional ones, items within bounds. Depth is
 * bounded: past it an open schema gets a scalar.
 */
export function validValue(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || Object.keys(schema).length === 0 || depth > 6) {
    return fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean(), fc.constant(null));
  }
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => validValue(s, depth + 1)));
  const types = typesOf(schema);
  if (types.length > 1) return fc.oneof(...types.map((type) => validValue({ ...schema, type }, depth + 1)));
  switch (types[0]) {
    case "string":
      return stringOf(schema);
    case "integer":
      return numberOf(schema, true);
    case "number":
      return numberOf(schema, false);
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return fc.array(validValue(schema.items, depth + 1), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 3, 3),
      });
    default:
      return objectOf(schema, depth);
  }
}

function objectOf(schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const names = Object.keys(properties);
  const required = schema.required ?? [];
  const known = fc.record(
    Object.fromEntries(
      names.map((name) => {
        const generated = validValue(properties[name], depth + 1);
        const known = hints[name];
        return [
          name,
          known?.length ? fc.oneof(fc.constantFrom(...known), fc.constantFrom(...known), generated) : generated,
        ];
      }),
    ) as Record<string, fc.Arbitrary<unknown>>,
    { requiredKeys: required.filter((name) => names.includes(name)) },
  );
  const extra = schema.additionalProperties;
  if (names.length > 0 || extra === false) return known;
  // A map (env, meta_data, settings): a few entries of its value schema.
  const valueSchema = typeof extra === "object" ? extra : undefined;
  return fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), validValue(valueSchema, depth + 1), {
    minKeys: schema.minProperties ?? 0,
    maxKeys: 3,
  });
}

/** How a mutation changed a valid value, for the report. */
export type Mutation = "wrong-type" | "missing-required" | "extra-field" | "huge-string" | "deep-nesting" | "root";

/** Every path into a value (its objects' keys and arrays' indexes), the root included as []. */
function pathsOf(value: unknown, prefix: Array<string | number> = [], out: Array<Array<string | number>> = []) {
  out.push(prefix);
  if (prefix.length > 8) return out;
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      pathsOf(v, [...prefix, i], out);
    });
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) pathsOf(v, [...prefix, k], out);
  }
  return out;
}

function setAt(root: unknown, path: Array<string | number>, replace: (old: unknown) => unknown): unknown {
  if (path.length === 0) return replace(root);
  const copy = (Array.isArray(root) ? [...root] : { ...(root as object) }) as Record<string | number, unknown>;
  const [head, ...rest] = path as [string | number, ...Array<string | number>];
  copy[head] = setAt(copy[head], rest, replace);
  return copy;
}

/**
 * A valid value with one thing made wrong: a field (or the whole value) replaced by a nasty value, a required
 * property dropped, an unknown property added, a string made huge, or a field nested deep.
 */
export function mutatedValue(
  schema: JsonSchema | undefined,
  valid: fc.Arbitrary<unknown> = validValue(schema),
): fc.Arbitrary<{ value: unknown; mutation: Mutation }> {
  return fc
    .tuple(
      valid,
      fc.nat(),
      fc.constantFrom<Mutation>(
        "wrong-type",
        "wrong-type",
        "missing-required",
        "extra-field",
        "huge-string",
        "deep-nesting",
        "root",
      ),
      nastyValue,
      fc.string({ unit: "binary", maxLength: 20 }),
    )
    .map(([value, pick, mutation, nasty, key]) => {
      const paths = pathsOf(value);
      const path = paths[pick % paths.length] ?? [];
      switch (mutation) {
        case "root":
          return { value: nasty, mutation };
        case "missing-required": {
          const required = schema?.required ?? [];
          if (required.length === 0 || !value || typeof value !== "object") return { value: nasty, mutation: "root" };
          const copy = { ...(value as Record<string, unknown>) };
          delete copy[required[pick % required.length] as string];
          return { value: copy, mutation };
        }
        case "extra-field":
          return {
            value: setAt(value, path, (old) =>
              old && typeof old === "object" && !Array.isArray(old)
                ? { ...old, [key || "extra"]: nasty }
                : { [key]: nasty },
            ),
            mutation,
          };
        case "huge-string":
          return { value: setAt(value, path, () => "h".repeat(HUGE)), mutation };
        case "deep-nesting":
          return {
            value: setAt(value, path, () => nested(pick % 2 ? 120 : 1000, pick % 3 ? "object" : "array")),
            mutation,
          };
        default:
          return { value: setAt(value, path, () => nasty), mutation };
      }
    });
}

/** Request bodies that are not JSON (or not the JSON a route can take at all), sent as application/json. */
export const MALFORMED_JSON = [
  "",
  "{",
  "}",
  '{"a":',
  '{"a":1,}',
  "[1,2",
  "{'a':1}",
  '{"a":1}{"b":2}',
  "\ufeff{}",
  "nul",
  "undefined",
  "NaN",
  "\u0000",
  '{"a":"\\ud800"}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  "null",
  "[]",
  '"a string"',
  "12345678901234567890123456789",
  `${"[".repeat(5000)}${"]".repeat(5000)}`,
  `${'{"a":'.repeat(3000)}1${"}".repeat(3000)}`,
];
