import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  attributeRows,
  citationsIn,
  headingAnchors,
  isServed,
  operationRows,
  parserNames,
  repositoryFiles,
  STEP_TYPES,
  selectsStepType,
  typesReading,
} from "./support/compatibility-doc.js";

// docs/compatibility.md stays true: its operation tables against what the running gateway serves (its OpenAPI
// document, and what an operation it says is not served answers), its step attribute table against what the
// pipeline parser reads, and every citation of a docs/ page and heading anywhere in the repository against the
// pages and their headings.

const ROOT = join(__dirname, "..");
const DOC = readFileSync(join(ROOT, "docs", "compatibility.md"), "utf8");
const STEPS_DIR = join(ROOT, "packages", "ci-rules", "src", "steps");

function need(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this suite with the stack project, which starts a stack`);
  return value;
}

describe("docs/compatibility.md against the gateway", () => {
  const rows = operationRows(DOC);
  let served: Set<string>;

  beforeAll(async () => {
    const res = await fetch(`${need("CONVEYOR_API_URL")}/v2/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    served = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)),
    );
  });

  it("lists each operation once", () => {
    expect(rows.length).toBeGreaterThan(100);
    const keys = rows.map((r) => r.key);
    expect(keys.filter((k, i) => keys.indexOf(k) !== i)).toEqual([]);
  });

  it("lists every operation the gateway serves, as supported or partial", () => {
    expect(served.size).toBeGreaterThan(80);
    const listed = new Set(rows.filter((r) => isServed(r.status)).map((r) => r.key));
    expect([...served].filter((key) => !listed.has(key)).sort()).toEqual([]);
  });

  it("says supported or partial only of operations the gateway serves", async () => {
    // A gRPC method (`/package.Service/Method`, the agent's StreamPings) is no REST operation of the OpenAPI
    // document: it is served when the gateway answers it with gRPC's own status, never a 404.
    const grpc = (r: { path: string }) => /^\/[a-z0-9]+(\.[a-z0-9]+)+\.[A-Z]\w*\/[A-Z]\w*$/.test(r.path);
    const wrong = rows.filter((r) => isServed(r.status) && !grpc(r) && !served.has(r.key));
    for (const row of rows.filter((r) => isServed(r.status) && grpc(r))) {
      const res = await fetch(`${need("CONVEYOR_API_URL")}${row.path}`, {
        method: row.method,
        headers: { "content-type": "application/grpc", te: "trailers" },
      });
      await res.arrayBuffer();
      if (res.status === 404 || !res.headers.get("grpc-status")) wrong.push(row);
    }
    expect(wrong.map((r) => `line ${r.line}: ${r.key}`)).toEqual([]);
  });

  it("says not yet or refused only of operations that are not served and answer 404", async () => {
    const unserved = rows.filter((r) => !isServed(r.status));
    // Few are left now that clusters, queues, secrets, OIDC and asynchronous uploads are served; the probe below
    // must still have some to try, or it proves nothing.
    expect(unserved.length).toBeGreaterThan(3);
    expect(unserved.filter((r) => served.has(r.key)).map((r) => `line ${r.line}: ${r.key}`)).toEqual([]);
    const wrong: string[] = [];
    for (const row of unserved) {
      const path = row.path
        .replace("{org}", need("CONVEYOR_ORG_SLUG"))
        .replace(/\{[a-z_]+\}/g, "00000000-0000-4000-8000-000000000000");
      const res = await fetch(`${need("CONVEYOR_API_URL")}${path}`, {
        method: row.method,
        headers: {
          authorization: path.startsWith("/v2/") ? `Bearer ${need("CONVEYOR_API_TOKEN")}` : "Token compat-doc-probe",
        },
      });
      const body = (await res.json().catch(() => ({}))) as { message?: string };
      // Not yet: the gateway has no such route. Refused: a route of its own says no, with its own message.
      const expected = row.status === "not yet" ? "Not Found" : body.message;
      if (res.status !== 404 || body.message !== expected) {
        wrong.push(`line ${row.line}: ${row.key} answered ${res.status} ${JSON.stringify(body)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe("docs/compatibility.md against the pipeline parser", () => {
  const rows = attributeRows(DOC);
  const byName = new Map(rows.map((r) => [r.name, r]));

  it("lists each attribute once, for known step types", () => {
    expect(rows.length).toBeGreaterThan(40);
    const names = rows.map((r) => r.name);
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
    const types: readonly string[] = STEP_TYPES;
    expect(rows.flatMap((r) => r.steps.filter((s) => !types.includes(s)).map((s) => `${r.name}: ${s}`))).toEqual([]);
  });

  it("lists every attribute the parser reads, on every step type that reads it", () => {
    expect(existsSync(STEPS_DIR)).toBe(true);
    const names = parserNames(STEPS_DIR);
    expect(names).toEqual(expect.arrayContaining(["command", "depends_on", "retry"]));
    const missing: string[] = [];
    for (const name of names) {
      const types = typesReading(name);
      if (types.length === 0) continue;
      const row = byName.get(name);
      if (!row || !isServed(row.status)) {
        missing.push(`${name} (read on ${types.join(", ")}) is not listed as supported or partial`);
        continue;
      }
      // A key that selects a step's type is listed with the type it selects, not probed on the others.
      if (selectsStepType(name)) continue;
      const unlisted = types.filter((t) => !row.steps.includes(t));
      if (unlisted.length > 0) missing.push(`${name} is also read on ${unlisted.join(", ")}`);
    }
    expect(missing).toEqual([]);
  });

  it("says supported or partial only of attributes the parser reads, and not yet or refused of none it ignores", () => {
    const wrong: string[] = [];
    for (const row of rows) {
      const types: readonly string[] = typesReading(row.name);
      const selects = selectsStepType(row.name);
      if (isServed(row.status)) {
        const unread = selects ? [] : row.steps.filter((s) => !types.includes(s));
        if (unread.length > 0) wrong.push(`line ${row.line}: ${row.name} is not read on ${unread.join(", ")}`);
      } else if (row.status === "not yet") {
        const read = row.steps.filter((s) => types.includes(s));
        if (read.length > 0) wrong.push(`line ${row.line}: ${row.name} is read on ${read.join(", ")}`);
      } else {
        const unread = row.steps.filter((s) => !types.includes(s));
        if (unread.length > 0) wrong.push(`line ${row.line}: refused ${row.name} is not read on ${unread.join(", ")}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe("citations of docs/ pages", () => {
  it("name pages and headings that exist", () => {
    const files = repositoryFiles(ROOT);
    expect(files).toEqual(expect.arrayContaining(["README.md", "docs/compatibility.md"]));
    const anchors = new Map<string, Set<string> | undefined>();
    const anchorsOf = (page: string) => {
      if (!anchors.has(page)) {
        const path = join(ROOT, page);
        anchors.set(page, existsSync(path) ? headingAnchors(readFileSync(path, "utf8")) : undefined);
      }
      return anchors.get(page);
    };
    const citations = files.flatMap((file) => citationsIn(file, readFileSync(join(ROOT, file), "utf8")));
    expect(citations.filter((c) => c.page === "docs/compatibility.md" && c.anchor).length).toBeGreaterThan(20);
    const broken = citations.filter((c) => {
      const known = anchorsOf(c.page);
      return known === undefined || (c.anchor !== undefined && c.anchor !== "" && !known.has(c.anchor));
    });
    expect(broken.map((c) => `${c.from}: ${c.page}${c.anchor ? `#${c.anchor}` : ""}`)).toEqual([]);
  });
});
