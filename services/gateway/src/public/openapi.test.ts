import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { DeclaredRoute } from "../route-declarations/declare.js";
import { buildTestApp } from "../testing/test-app.js";
import { isApiRoute, OPENAPI_PATH } from "./openapi.js";

/**
 * The committed summary of the OpenAPI document: one line per operation (method, path, operationId, scope or agent
 * credentials, and a digest of its whole declaration: parameters, body, responses), plus the document's head. A
 * change to any route's declaration changes its line, and this test fails until the snapshot is written again
 * (UPDATE_OPENAPI_SNAPSHOT=1) and the change reviewed with the code. (The whole document is ~0.9 MB, mostly the
 * build, job and pipeline schemas repeated in every answer that embeds them: GET /v2/openapi.json serves it.)
 */
const SNAPSHOT = join(__dirname, "..", "..", "openapi.snapshot.txt");

/** JSON with sorted keys, so that a digest does not depend on the order properties were declared in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
const digest = (value: unknown) => createHash("sha256").update(canonical(value)).digest("hex").slice(0, 16);

type Operation = { operationId?: string; summary?: string; security?: unknown[]; "x-scope"?: string | null };
type OpenApi = { openapi: string; paths: Record<string, Record<string, Operation>> };

/** `/v2/organizations/{org}` as Fastify writes it: `/v2/organizations/:org`. */
const fastifyPath = (path: string) => path.replace(/\{([^}]+)\}/g, ":$1");

let app: FastifyInstance;
let routes: readonly DeclaredRoute[];
let doc: OpenApi;

beforeAll(async () => {
  ({ app, routes } = await buildTestApp({ orgs: [], users: [], tokens: new Map(), revoked: [] }));
  const res = await app.inject({ method: "GET", url: OPENAPI_PATH });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});
afterAll(() => app.close());

const documented = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ key: `${method.toUpperCase()} ${fastifyPath(path)}`, op })),
  );
const served = () =>
  routes
    .filter((r) => r.method !== "HEAD" && r.method !== "OPTIONS")
    .filter((r) => isApiRoute(r.url))
    .map((r) => `${r.method} ${r.url}`);

describe("the OpenAPI document", () => {
  it("is OpenAPI 3.1, served without a token", () => {
    expect(doc.openapi).toBe("3.1.0");
  });

  it("documents every route the gateway serves, and serves every route it documents", () => {
    const docKeys = new Set(documented().map((d) => d.key));
    const servedKeys = new Set(served());
    expect(servedKeys.size).toBeGreaterThan(80);
    expect([...servedKeys].filter((k) => !docKeys.has(k))).toEqual([]);
    expect([...docKeys].filter((k) => !servedKeys.has(k))).toEqual([]);
  });

  it("gives each operation a unique operationId, a summary and its security: a scope for REST, credentials for agents", () => {
    const ids = new Map<string, string>();
    for (const { key, op } of documented()) {
      expect([key, typeof op.operationId, typeof op.summary]).toEqual([key, "string", "string"]);
      expect([key, ids.get(op.operationId as string)]).toEqual([key, undefined]);
      ids.set(op.operationId as string, key);
      expect([key, Array.isArray(op.security)]).toEqual([key, true]);
      // Public /v2 routes (the document itself, Buildkite's meta) need no token, so no scope.
      const isPublic = op.security?.length === 0;
      if (key.includes(" /v2/") && !isPublic) expect([key, "x-scope" in op]).toEqual([key, true]);
    }
  });

  it("matches the committed snapshot (UPDATE_OPENAPI_SNAPSHOT=1 writes it after a reviewed change)", () => {
    const { paths, ...head } = doc;
    const lines = Object.entries(paths).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => {
        const credential = (op as { "x-credential"?: string[] })["x-credential"]?.join("|");
        const access = "x-scope" in op ? (op["x-scope"] ?? "any-token") : (credential ?? "public");
        return `${method.toUpperCase()} ${path} ${op.operationId} ${access} ${digest(op)}`;
      }),
    );
    const current = `# document ${digest(head)}\n${lines.sort().join("\n")}\n`;
    if (process.env.UPDATE_OPENAPI_SNAPSHOT === "1") writeFileSync(SNAPSHOT, current);
    expect(current).toBe(readFileSync(SNAPSHOT, "utf8"));
  });
});
