import { lenientJson } from "@conveyor/deploy";
import { stack } from "./stack-env.js";

// The route table of the generated access matrix, read from the served OpenAPI document, and the runner that sends
// the matrix's requests a few at a time and checks each answer.

/** Buildkite's answer to a missing or unknown token (services/gateway/src/auth/authenticate.ts). */
export const AUTHENTICATION_REQUIRED =
  "Authentication required. Please supply a valid API Access Token: https://buildkite.com/docs/apis/rest-api#authentication";

/** The kinds of refusal the REST matrix tries on every /v2 operation. */
export const REST_KINDS = ["unauthenticated", "scope", "foreign", "parent", "member"] as const;
export type RestKind = (typeof REST_KINDS)[number];

/** One operation of the document. */
export interface Operation {
  method: string;
  /** The OpenAPI path template, `/v2/organizations/{org}`. */
  path: string;
  operationId: string;
  /** `x-scope`: the scope the token must carry, or null for any token (undefined: the document does not say). */
  scope: string | null | undefined;
  /** `x-credential`: the agent API credentials the operation accepts. */
  credential?: string[];
  /** Served without any token (`security: []`). */
  public: boolean;
  /** Takes the token also as the query parameter `access_token` (spec: Authentication 2). */
  queryToken: boolean;
}

const METHODS = ["get", "put", "post", "delete", "patch"] as const;

type OpenApiOperation = {
  operationId: string;
  security?: unknown[];
  "x-scope"?: string | null;
  "x-credential"?: string[];
  parameters?: Array<{ in: string; name: string }>;
};

/** Every operation of an OpenAPI document. */
export function operationsOf(doc: { paths: Record<string, Partial<Record<string, OpenApiOperation>>> }): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      ops.push({
        method: method.toUpperCase(),
        path,
        operationId: op.operationId,
        scope: op["x-scope"],
        credential: op["x-credential"],
        public: Array.isArray(op.security) && op.security.length === 0,
        queryToken: (op.parameters ?? []).some((p) => p.in === "query" && p.name === "access_token"),
      });
    }
  }
  return ops;
}

/** An answer as the matrix sees it. */
export interface Answer {
  status: number;
  body: unknown;
  text: string;
}

/** Sends one request to the stack; never follows redirects. */
export async function request(
  method: string,
  path: string,
  authorization: string | undefined,
  body: unknown,
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (authorization) headers.authorization = authorization;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${stack.apiUrl}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    redirect: "manual",
  });
  const text = await res.text();
  const parsed = lenientJson(text);
  return { status: res.status, body: parsed, text };
}

/** What is wrong with an answer, or undefined: the status, and for 4xx the documented `{ "message": … }` body. */
export function problemWith(
  answer: Answer,
  expect: { status: number; message?: string },
  method = "GET",
): string | undefined {
  if (answer.status !== expect.status)
    return `status ${answer.status}, not ${expect.status}: ${answer.text.slice(0, 200)}`;
  if (expect.status < 400 || method === "HEAD") return undefined;
  const body = answer.body as Record<string, unknown> | undefined;
  if (!body || typeof body !== "object" || Array.isArray(body) || Object.keys(body).join() !== "message") {
    return `body is not { "message": … }: ${answer.text.slice(0, 200)}`;
  }
  if (typeof body.message !== "string") return `message is not a string: ${answer.text.slice(0, 200)}`;
  if (expect.message !== undefined && body.message !== expect.message) {
    return `message ${JSON.stringify(body.message)}, not ${JSON.stringify(expect.message)}`;
  }
  return undefined;
}

/** Runs `work` over `items`, `width` at a time, in order of start. */
export async function pooled<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  return results;
}

/** Counts by a key, as a plain object for printing. */
export function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}
