import type { ALL_SCOPES } from "@conveyor/runtime";
import { type TSchema, Type, type TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifySchema, onRouteHookHandler, preValidationAsyncHookHandler } from "fastify";
import { HttpError } from "../errors/http-error.js";
import { ErrorBody } from "../render/schemas.js";

/** A token scope a REST route may require: one of the scopes identity knows (ALL_SCOPES, @conveyor/runtime). */
export type Scope = (typeof ALL_SCOPES)[number];

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * REST routes (/v2): the scope the caller's token must carry; `null` lets any valid token call the route. Every
     * route of the REST API's scope declares it: the app refuses to start otherwise (auth/authenticate.ts).
     */
    scope?: Scope | null;
    /** A /v2 route anyone may call without a token (the OpenAPI document, registered outside the REST API's scope). */
    public?: true;
    /**
     * How a body that fails its schema is answered: "fields" (default) is Buildkite's 422
     * `{"message":"Validation Failed","errors":[{field, code}]}`; "sentence" is the team association routes'
     * `{"message":"Validation failed: <reason>"}` (docs/compatibility.md#authentication-and-errors).
     */
    bodyErrors?: "fields" | "sentence";
  }
}

/** The gateway with TypeBox as its type provider: route schemas give handlers their types. */
export type TypedApp = ReturnType<typeof typed>;

/** The app with the TypeBox type provider, as every route module declares its routes. */
export function typed(app: FastifyInstance) {
  return app.withTypeProvider<TypeBoxTypeProvider>();
}

/** A route's answers: its success status with `ok`, and the JSON error body for every 4xx and 5xx. */
export function responses<S extends number, T extends TSchema>(status: S, ok: T) {
  return { [status]: ok, "4xx": ErrorBody, "5xx": ErrorBody } as { [K in S]: T } & {
    "4xx": typeof ErrorBody;
    "5xx": typeof ErrorBody;
  };
}

/**
 * The answers of a read whose answer carries an ETag (answer-cache/answer-cache.ts): `ok` with `status`, or 304 with no body
 * when the request's If-None-Match names the current answer.
 */
export function conditionalResponses<S extends number, T extends TSchema>(status: S, ok: T) {
  return {
    ...responses(status, ok),
    304: Type.Unsafe<undefined>({ type: "null", description: "Not Modified: If-None-Match names the current answer" }),
  };
}

/** A route that answers 204 with no body. */
export const noContent = responses(204, Type.Unsafe<undefined>({ type: "null", description: "No Content" }));

/** What a request names by a path parameter, for the 404 a parameter that cannot name anything gets. */
const PARAM_THINGS: Record<string, string> = {
  org: "organization",
  pipeline: "pipeline",
  slug: "pipeline",
  number: "build",
  job: "job",
  id: "record",
  user: "user",
  team: "team",
  suite: "suite",
  rule: "rule",
  registry: "registry",
  token: "token",
  agent: "agent",
  context: "annotation",
  annotation: "annotation",
  cluster: "cluster",
  secret: "secret",
};

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  maxItems?: number;
  pattern?: string;
};

function typesOf(schema: JsonSchema | undefined): string[] {
  if (!schema) return [];
  if (schema.anyOf) return schema.anyOf.flatMap(typesOf);
  if (schema.const !== undefined) return [typeof schema.const];
  return [schema.type ?? []].flat();
}

/**
 * Reads one query or path value as its schema types it, leniently as Buildkite's API does: `true`/`false` in any
 * case and `1`/`0` are booleans, digits are integers, a repeated or `[]` parameter is an array, and an empty value
 * is no value. What cannot be read is left as it came, for the schema to refuse with the parameter's name.
 */
function coerce(raw: unknown, schema: JsonSchema | undefined): unknown {
  const types = typesOf(schema);
  if (types.includes("array")) {
    const items = schema?.anyOf?.find((s) => s.type === "array")?.items ?? schema?.items;
    return [raw].flat().map((v) => coerce(v, items));
  }
  if (typeof raw !== "string") return raw;
  if (types.includes("string")) return raw;
  if (types.includes("boolean")) {
    const v = raw.toLowerCase();
    if (v === "true" || v === "1") return true;
    if (v === "false" || v === "0") return false;
  }
  if ((types.includes("integer") || types.includes("number")) && /^[+-]?\d{1,30}$/.test(raw)) return Number(raw);
  return raw;
}

/** A preValidation hook that reads a route's query string or path parameters as their schema types them. */
function coercer(part: "query" | "params", schema: JsonSchema): preValidationAsyncHookHandler {
  const properties = schema.properties ?? {};
  return async (request) => {
    const values = request[part] as Record<string, unknown> | undefined;
    if (!values || typeof values !== "object") return;
    for (const [name, value] of Object.entries(values)) {
      if (value === "" && part === "query") {
        delete values[name];
        continue;
      }
      // `state[]=a&state[]=b` fills the array parameter `state[]`; a schema names it so, as go-buildkite sends it.
      const property = properties[name];
      if (property) values[name] = coerce(value, property);
    }
  };
}

/** What a query parameter must be, in words, for the 400 that refuses it. */
function expectation(schema: JsonSchema | undefined): string {
  if (!schema) return "valid";
  if (schema.enum) return `one of ${schema.enum.join(", ")}`;
  const types = typesOf(schema);
  if (types.includes("array") && schema.maxItems !== undefined) return `given at most ${schema.maxItems} times`;
  if (types.includes("boolean")) return "true or false";
  if (types.includes("integer")) {
    if (schema.minimum === 1) return "a positive integer";
    return "an integer";
  }
  if (types.includes("string") && schema.maxLength !== undefined) return `at most ${schema.maxLength} characters`;
  if (types.includes("string")) return "given only once";
  return "valid";
}

type AjvError = { instancePath: string; keyword: string; message?: string; params?: Record<string, unknown> };

/**
 * The answer to a request that fails its route's schema: a query parameter is a 400 that names it and says what
 * it must be; a path parameter that cannot name anything is a 404, as a name of nothing is; a body is Buildkite's
 * 422 (built by the error handler from the validation errors), or the team routes' sentence.
 */
function schemaErrorFormatter(route: { schema?: FastifySchema; config?: { bodyErrors?: "fields" | "sentence" } }) {
  return (errors: AjvError[], dataVar: string): Error => {
    const first = errors[0];
    const name = first?.instancePath.split("/")[1] ?? String(first?.params?.missingProperty ?? "");
    if (dataVar === "querystring") {
      const schema = (route.schema?.querystring as JsonSchema | undefined)?.properties?.[name];
      return new HttpError(400, `${name} must be ${expectation(schema)}`);
    }
    if (dataVar === "params") return new HttpError(404, `No ${PARAM_THINGS[name] ?? "record"} found`);
    if (dataVar === "body" && route.config?.bodyErrors === "sentence") {
      // One reason per field: the first (a value failing every branch of a union is named once).
      const reasons = new Map<string, string>();
      for (const e of errors.filter((e) => e.keyword !== "anyOf")) {
        const field = e.instancePath.replace(/^\//, "").replace(/\//g, ".") || String(e.params?.missingProperty ?? "");
        if (!reasons.has(field)) reasons.set(field, `${field} ${e.message ?? "is invalid"}`.trim());
      }
      return new HttpError(422, `Validation failed: ${[...reasons.values()].join(", ")}`);
    }
    return new Error(first?.message ?? "is invalid");
  };
}

/**
 * Makes route declarations whole, app-wide: query strings and path parameters are read as their schemas type them,
 * and schema failures get the API's answers. Register before any route; returns the routes as they are declared.
 */
export function registerRouteDeclarations(app: FastifyInstance): DeclaredRoute[] {
  const routes: DeclaredRoute[] = [];
  const check: onRouteHookHandler = (route) => {
    // Fastify adds a HEAD route beside every GET, with the GET's declaration.
    if (![route.method].flat().includes("HEAD")) {
      for (const method of [route.method].flat()) routes.push({ method, url: route.url });
    }
    const hooks: preValidationAsyncHookHandler[] = [];
    if (route.schema?.querystring) hooks.push(coercer("query", route.schema.querystring as JsonSchema));
    if (route.schema?.params) hooks.push(coercer("params", route.schema.params as JsonSchema));
    if (hooks.length > 0) route.preValidation = [...hooks, ...[route.preValidation ?? []].flat()];
    if (route.schema && !route.schemaErrorFormatter) {
      route.schemaErrorFormatter = schemaErrorFormatter(route) as unknown as typeof route.schemaErrorFormatter;
    }
  };
  app.addHook("onRoute", check);
  return routes;
}

/**
 * Makes every route of an API's scope (the REST and agent APIs) declare an operationId, summary and tags, which the
 * OpenAPI document shows: the app refuses to start otherwise.
 */
export function requireDocumentedRoutes(scope: FastifyInstance): void {
  scope.addHook("onRoute", (route) => {
    const schema = route.schema as
      | (FastifySchema & { operationId?: string; summary?: string; tags?: string[] })
      | undefined;
    if (!schema?.operationId || !schema.summary || !schema.tags?.length) {
      throw new Error(
        `route ${[route.method].flat().join(",")} ${route.url} declares no operationId, summary and tags`,
      );
    }
  });
}

/** A route the app serves: its method and URL pattern (`/v2/organizations/:org`). */
export interface DeclaredRoute {
  method: string;
  url: string;
}
