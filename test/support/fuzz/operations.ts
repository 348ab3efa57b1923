import fc from "fast-check";
import {
  type JsonSchema,
  MALFORMED_JSON,
  mutatedValue,
  NASTY_STRINGS,
  nastyValue,
  validValue,
} from "./schema-arbitrary.js";

interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema?: JsonSchema;
}

interface OpenApiOperation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content?: Record<string, { schema: JsonSchema }> }>;
  "x-scope"?: string | null;
  "x-credential"?: string[];
}

/** One operation of the OpenAPI document, as the fuzzer drives it. */
export interface Operation {
  id: string;
  method: string;
  /** The path template, `/v2/organizations/{org}`. */
  path: string;
  pathParams: Parameter[];
  query: Parameter[];
  body?: JsonSchema;
  responses: OpenApiOperation["responses"];
  /** Whether it can change anything (every method but GET). */
  writes: boolean;
  /** The agent credential kinds it takes (`x-credential`: registration, agent, job); empty for the REST API. */
  credential: string[];
}

/**
 * Reads the document's operations under a prefix: `/v2/` (the REST API, the default) or `/v3/` (the agent API).
 * A path parameter the template names but the parameters leave out is still filled (as a string).
 */
export function operationsOf(
  doc: { paths: Record<string, Record<string, OpenApiOperation>> },
  prefix: "/v2/" | "/v3/" = "/v2/",
): Operation[] {
  const ops: Operation[] = [];
  for (const [path, byMethod] of Object.entries(doc.paths)) {
    if (!path.startsWith(prefix)) continue;
    for (const [method, op] of Object.entries(byMethod)) {
      const params = op.parameters ?? [];
      const declared = params.filter((p) => p.in === "path");
      const named = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
      const undeclared = named.filter((name) => !declared.some((p) => p.name === name));
      ops.push({
        id: op.operationId,
        method: method.toUpperCase(),
        path,
        pathParams: [...declared, ...undeclared.map((name) => ({ name, in: "path" as const, required: true }))],
        query: params.filter((p) => p.in === "query"),
        body: op.requestBody?.content["application/json"]?.schema,
        responses: op.responses,
        writes: method !== "get",
        credential: op["x-credential"] ?? [],
      });
    }
  }
  return ops.sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** encodeURIComponent for any string: a lone surrogate (which it refuses) is sent as U+FFFD. */
function enc(value: string): string {
  return encodeURIComponent(
    value.replace(/[\ud800-\udfff]/g, (c, i: number, all: string) => {
      const code = c.charCodeAt(0);
      const pair = code < 0xdc00 ? all.charCodeAt(i + 1) : all.charCodeAt(i - 1);
      const paired = code < 0xdc00 ? pair >= 0xdc00 && pair <= 0xdfff : pair >= 0xd800 && pair < 0xdc00;
      return paired ? c : "\ufffd";
    }),
  );
}

/** A request as it is sent (check.ts's sendRaw), byte for byte. */
export interface RawRequest {
  method: string;
  /** The raw path and query string, sent byte for byte (no URL normalization of `..`). */
  url: string;
  contentType?: string;
  /** Other headers (the agent's log chunks are `Content-Encoding: gzip`). */
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The Authorization header: absent sends the run's bearer token, null sends none. */
  authorization?: string | null;
}

/** A request the fuzzer sends: what it is and how it was made wrong. */
export interface FuzzRequest extends RawRequest {
  op: Operation;
  /** What was made wrong: empty for a request built valid throughout. */
  mutations: string[];
}

/** Path parameter values that name nothing, or cannot: dot segments, encoded slashes and NULs, huge, unicode. */
const BAD_SEGMENTS = fc.oneof(
  fc.constantFrom(
    "..",
    ".",
    "%2e%2e",
    "%2F",
    "a%2Fb",
    "%00",
    "%ZZ",
    "%",
    "0",
    "-1",
    "2147483648",
    "9007199254740993",
    "1e3",
    "NaN",
    "null",
    "undefined",
    "%20",
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    enc("😀"),
    enc("\u202e"),
    "a".repeat(101),
    "b".repeat(4000),
  ),
  fc.string({ unit: "binary", minLength: 1, maxLength: 30 }).map((s) => enc(s)),
  fc.uuid().map(String),
);

/** Query values that are not what a parameter takes: overflowing and negative numbers, arrays, nasty strings. */
const BAD_QUERY_VALUES = fc.oneof(
  fc.constantFrom("2147483648", "-1", "0", "1.5", "1e3", "9007199254740993", "", "true", "yes", "[]", "%00", "%ZZ"),
  fc.constantFrom(...NASTY_STRINGS).map((s) => enc(s)),
  fc.constant("q".repeat(2500)),
);

/** The longest query string sent. */
const MAX_QUERY = 6000;

/** A query value the parameter's schema takes, as text. */
function validQueryValue(schema: JsonSchema | undefined): fc.Arbitrary<string[]> {
  const isArray = [schema?.type].flat().includes("array") || schema?.anyOf?.some((s) => s.type === "array");
  const scalar = (isArray ? (schema?.anyOf?.find((s) => s.type === "array")?.items ?? schema?.items) : schema) ?? {};
  const one = validValue(scalar).map((v) => enc(typeof v === "string" ? v : JSON.stringify(v)));
  return isArray ? fc.array(one, { minLength: 1, maxLength: 3 }) : one.map((v) => [v]);
}

/** The query string: each parameter left out, valid, or wrong (or repeated); sometimes an unknown parameter. */
function queryOf(op: Operation): fc.Arbitrary<{ text: string; mutations: string[] }> {
  const valid = (p: Parameter) =>
    fc.oneof(
      fc.constant({ pairs: [] as string[], bad: false }),
      validQueryValue(p.schema).map((vs) => ({ pairs: vs.map((v) => `${p.name}=${v}`), bad: false })),
    );
  // Half the query strings are valid throughout: with a dozen parameters, one wrong value would otherwise be in
  // nearly every request, and the valid combinations would never reach the backend.
  const allValid = fc.tuple(...op.query.map(valid));
  const parts = op.query.map((p) =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constant({ pairs: [] as string[], bad: false }) },
      {
        weight: 3,
        arbitrary: validQueryValue(p.schema).map((vs) => ({ pairs: vs.map((v) => `${p.name}=${v}`), bad: false })),
      },
      {
        weight: 2,
        arbitrary: fc
          .array(BAD_QUERY_VALUES, { minLength: 1, maxLength: 3 })
          .map((vs) => ({ pairs: vs.map((v) => `${enc(p.name)}=${v}`), bad: true })),
      },
    ),
  );
  const unknown = fc.option(
    fc.tuple(fc.constantFrom("state[]", "page[]", "per_page[0]", "__proto__", "unknown", "a.b"), BAD_QUERY_VALUES),
    { freq: 5 },
  );
  return fc.tuple(fc.oneof(allValid, fc.tuple(...parts)), unknown).map(([chosen, extra]) => {
    const pairs = chosen.flatMap((c) => c.pairs);
    // Under the gateway's URL limit (8 KB; Node's 16 KB header limit closes the connection): the routes are fuzzed
    // here, not the connection limits.
    while (pairs.join("&").length > MAX_QUERY) pairs.pop();
    const mutations = chosen.some((c) => c.bad) ? ["query"] : [];
    if (extra) {
      pairs.push(`${enc(extra[0])}=${extra[1]}`);
      mutations.push("extra-query");
    }
    return { text: pairs.length ? `?${pairs.join("&")}` : "", mutations };
  });
}

/**
 * Path parameters: mostly the run's real resources (so the request reaches the handler), sometimes bad segments.
 * `protect` lists parameters that must not name the real resource (a DELETE that would remove a fixture).
 */
function pathOf(
  op: Operation,
  fixtures: Record<string, string>,
  protect: readonly string[],
  decoys: Record<string, readonly string[]>,
): fc.Arbitrary<{ text: string; mutations: string[] }> {
  const names = op.pathParams.map((p) => p.name);
  const values = names.map((name) => {
    const real = fixtures[name];
    if (real === undefined || protect.includes(name)) return BAD_SEGMENTS.map((v) => ({ v, bad: true }));
    const others = decoys[name] ?? [];
    return fc.oneof(
      { weight: 6, arbitrary: fc.constant({ v: enc(real), bad: false }) },
      { weight: 1, arbitrary: BAD_SEGMENTS.map((v) => ({ v, bad: true })) },
      ...(others.length
        ? [{ weight: 1, arbitrary: fc.constantFrom(...others).map((v) => ({ v: enc(v), bad: true })) }]
        : []),
    );
  });
  return fc.tuple(...values).map((chosen) => {
    let text = op.path;
    chosen.forEach((c, i) => {
      text = text.replace(`{${names[i]}}`, c.v);
    });
    return { text, mutations: chosen.some((c) => c.bad) ? ["path"] : [] };
  });
}

/** A request body as sent, with how it was made wrong. */
export type BodyChoice = {
  body?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
  /** The query string that goes with this body (a log chunk's size), instead of a generated one. */
  query?: string;
  mutations: string[];
};

/** The Authorization header of a request (null: none), with how it was made wrong. */
export type AuthChoice = { authorization?: string | null; mutations: string[] };

/** The body: valid for its schema, mutated, malformed JSON, JSON under another content type, or none. */
function bodyOf(op: Operation, allowValid: boolean, examples: readonly object[]): fc.Arbitrary<BodyChoice> {
  const schema = op.body;
  // Valid bodies: generated, or a known-good example with some generated fields laid over it (so that writes get
  // past the backend's checks of what a schema cannot say, and their deeper paths are reached).
  const generated = validValue(schema);
  const valid = examples.length
    ? fc.oneof(
        fc.constantFrom(...examples),
        fc.tuple(fc.constantFrom(...examples), generated, fc.nat()).map(([example, extra, n]) => {
          if (!extra || typeof extra !== "object" || Array.isArray(extra)) return example;
          // One or two generated fields: more would almost always include one the backend refuses first.
          const keys = Object.keys(extra);
          const picked = keys.length ? [keys[n % keys.length], ...(n & 1 ? [keys[(n >> 3) % keys.length]] : [])] : [];
          const fields = extra as Record<string, unknown>;
          return { ...example, ...Object.fromEntries(picked.map((k) => [k, fields[k as string]])) };
        }),
      )
    : generated;
  if (!schema) {
    // No documented body: usually none, sometimes an unexpected one.
    return fc.oneof(
      { weight: 8, arbitrary: fc.constant<BodyChoice>({ mutations: [] }) },
      {
        weight: 1,
        arbitrary: nastyValue.map((v) => ({
          body: JSON.stringify(v),
          contentType: "application/json",
          mutations: ["unexpected-body"],
        })),
      },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom(...MALFORMED_JSON)
          .map((b) => ({ body: b, contentType: "application/json", mutations: ["malformed-json"] })),
      },
    );
  }
  const choices: Array<{ weight: number; arbitrary: fc.Arbitrary<BodyChoice> }> = [
    {
      weight: 6,
      arbitrary: mutatedValue(schema, valid).map(({ value, mutation }) => ({
        body: JSON.stringify(value),
        contentType: "application/json",
        mutations: [mutation],
      })),
    },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(...MALFORMED_JSON)
        .map((b) => ({ body: b, contentType: "application/json", mutations: ["malformed-json"] })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          validValue(schema),
          fc.constantFrom(
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/json; charset=latin1",
            "application/jsonx",
            "",
          ),
        )
        .map(([v, ct]) => ({ body: JSON.stringify(v), contentType: ct, mutations: ["content-type"] })),
    },
    { weight: 1, arbitrary: fc.constant<BodyChoice>({ mutations: ["no-body"] }) },
  ];
  if (allowValid) {
    choices.push({
      weight: 3,
      arbitrary: valid.map((v) => ({
        body: JSON.stringify(v),
        contentType: "application/json",
        mutations: [],
      })),
    });
  }
  return fc.oneof(...choices);
}

export interface RequestOptions {
  /** The run's resources by path parameter name (org, pipeline, slug, number, job, team, user, …). */
  fixtures: Record<string, string>;
  /** Fixtures that differ under a path prefix (team routes name a pipeline by its UUID), longest prefix first. */
  fixturesUnder?: Array<[string, Record<string, string>]>;
  /** Known-good bodies by operation id. */
  examples?: Record<string, readonly object[]>;
  /** Path parameters that must never name the real resource, by operation id. */
  protect?: Record<string, readonly string[]>;
  /** Operations whose valid requests may be sent (writes that only add things). */
  allowValid?: (op: Operation) => boolean;
  /** Real resources that are not the fixture's, by path parameter name (another build's job): sent now and then. */
  decoys?: Record<string, readonly string[]>;
  /** Bodies by operation id that the schemas cannot describe (the agent's gzip log chunks), instead of generated ones. */
  bodies?: Record<string, (allowValid: boolean) => fc.Arbitrary<BodyChoice>>;
  /** The Authorization header of each request, by operation (absent: the run's bearer token on every request). */
  credentials?: (op: Operation) => fc.Arbitrary<AuthChoice>;
}

function fixturesFor(op: Operation, options: RequestOptions): Record<string, string> {
  const under = options.fixturesUnder?.find(([prefix]) => op.path.startsWith(prefix));
  return under ? { ...options.fixtures, ...under[1] } : options.fixtures;
}

/** Requests for one operation: path, query and body, each valid or made wrong. */
export function requestsOf(op: Operation, options: RequestOptions): fc.Arbitrary<FuzzRequest> {
  const protect = options.protect?.[op.id] ?? [];
  const allowValid = !op.writes || (options.allowValid?.(op) ?? false);
  return fc
    .tuple(
      pathOf(op, fixturesFor(op, options), protect, options.decoys ?? {}),
      queryOf(op),
      options.bodies?.[op.id]?.(allowValid) ?? bodyOf(op, allowValid, options.examples?.[op.id] ?? []),
      options.credentials?.(op) ?? fc.constant<AuthChoice>({ mutations: [] }),
    )
    .map(([path, query, body, auth]) => ({
      op,
      method: op.method,
      url: `${path.text}${body.query ?? query.text}`,
      contentType: body.contentType,
      ...(body.headers ? { headers: body.headers } : {}),
      body: body.body,
      ...("authorization" in auth ? { authorization: auth.authorization } : {}),
      mutations: [
        ...path.mutations,
        ...(body.query === undefined ? query.mutations : []),
        ...body.mutations,
        ...auth.mutations,
      ],
    }));
}
