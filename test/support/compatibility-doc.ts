/**
 * Reading docs/compatibility.md as data (its operation and step attribute tables, its headings' anchors) and
 * finding out which step attributes the pipeline parser reads, for test/compatibility-doc.test.ts.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parsePipelineYaml } from "@conveyor/ci-rules";

/** The statuses a row of the compatibility tables may carry. */
export const STATUSES = ["supported", "partial", "refused", "not yet"] as const;
export type Status = (typeof STATUSES)[number];

/** Whether rows with this status claim the thing is served (an operation) or read (a step attribute). */
export const isServed = (status: Status) => status === "supported" || status === "partial";

/** One row of a Markdown table, its cells trimmed, with the line it is on. */
interface TableRow {
  cells: string[];
  line: number;
}

/** A Markdown table: its header cells (lower case) and its body rows. */
interface Table {
  header: string[];
  rows: TableRow[];
}

const cellsOf = (line: string) =>
  line
    .trim()
    .replace(/^\|/, "")
    .replace(/\|$/, "")
    .split("|")
    .map((c) => c.trim());

/** Every table of a Markdown document (a header line, a `---` line, then rows). */
export function tablesOf(markdown: string): Table[] {
  const lines = markdown.split("\n");
  const tables: Table[] = [];
  for (let i = 0; i + 1 < lines.length; i++) {
    const head = lines[i] ?? "";
    if (!head.trim().startsWith("|") || !/^\s*\|[\s:|-]+\|\s*$/.test(lines[i + 1] ?? "")) continue;
    const table: Table = { header: cellsOf(head).map((c) => c.toLowerCase()), rows: [] };
    let j = i + 2;
    for (; j < lines.length && (lines[j] ?? "").trim().startsWith("|"); j++) {
      table.rows.push({ cells: cellsOf(lines[j] ?? ""), line: j + 1 });
    }
    tables.push(table);
    i = j - 1;
  }
  return tables;
}

/** An operation row: `METHOD /path` and its status. */
export interface OperationRow {
  key: string;
  method: string;
  path: string;
  status: Status;
  line: number;
}

/** A step attribute row: the attribute, the step types it is listed for, and its status. */
export interface AttributeRow {
  name: string;
  steps: string[];
  status: Status;
  line: number;
}

function statusOf(cell: string | undefined, line: number): Status {
  const status = STATUSES.find((s) => s === cell);
  if (!status) throw new Error(`docs/compatibility.md line ${line}: status "${cell}" is not one of ${STATUSES}`);
  return status;
}

/** The rows of every table headed `operation | status | …`; a first cell that is not `METHOD /path` throws. */
export function operationRows(markdown: string): OperationRow[] {
  return tablesOf(markdown)
    .filter((t) => t.header[0] === "operation" && t.header[1] === "status")
    .flatMap((t) =>
      t.rows.map(({ cells, line }) => {
        const m = /^`(GET|HEAD|POST|PUT|PATCH|DELETE) (\/\S*)`$/.exec(cells[0] ?? "");
        if (!m) throw new Error(`docs/compatibility.md line ${line}: "${cells[0]}" is not \`METHOD /path\``);
        const [, method = "", path = ""] = m;
        return { key: `${method} ${path}`, method, path, status: statusOf(cells[1], line), line };
      }),
    );
}

/** The rows of every table headed `attribute | steps | status | …`. */
export function attributeRows(markdown: string): AttributeRow[] {
  return tablesOf(markdown)
    .filter((t) => t.header[0] === "attribute" && t.header[1] === "steps" && t.header[2] === "status")
    .flatMap((t) =>
      t.rows.map(({ cells, line }) => {
        const m = /^`([a-z_]+)`$/.exec(cells[0] ?? "");
        if (!m?.[1]) throw new Error(`docs/compatibility.md line ${line}: "${cells[0]}" is not \`attribute\``);
        const steps = (cells[1] ?? "").split(",").map((s) => s.trim());
        return { name: m[1], steps, status: statusOf(cells[2], line), line };
      }),
    );
}

/** The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
export function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor of a Markdown document's headings, a repeated one numbered as GitHub numbers it (`-1`, `-2`). */
export function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (!m?.[1]) continue;
    const base = githubAnchor(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The step types of the attribute table: the top level of the YAML, then each kind of step. */
export const STEP_TYPES = ["pipeline", "command", "wait", "block", "input", "trigger", "group"] as const;
type StepType = (typeof STEP_TYPES)[number];

/**
 * A pipeline with one step of each type (or, for `pipeline`, the top level), with `extra` attributes added. Each
 * step is written with the key that selects its type, as people write them.
 */
const PIPELINES: Record<StepType, (extra: Record<string, unknown>) => Record<string, unknown>> = {
  pipeline: (x) => ({ steps: [{ command: "true" }], ...x }),
  command: (x) => ({ steps: [{ command: "true", ...x }] }),
  wait: (x) => ({ steps: [{ wait: null, ...x }] }),
  block: (x) => ({ steps: [{ block: "Ship?", ...x }] }),
  input: (x) => ({ steps: [{ input: "Name?", ...x }] }),
  trigger: (x) => ({ steps: [{ trigger: "another-pipeline", ...x }] }),
  group: (x) => ({ steps: [{ group: "Tests", steps: [{ command: "true" }], ...x }] }),
};

/** The keys each of those pipelines has already: read by definition. */
function baseKeys(type: StepType): readonly string[] {
  const pipeline = PIPELINES[type]({});
  const step = type === "pipeline" ? pipeline : (pipeline.steps as Record<string, unknown>[])[0];
  return Object.keys(step ?? {});
}

/**
 * Values of every shape an attribute may be given: nested lists, a nested mapping, text, numbers, booleans, empty
 * and one-entry collections. An attribute the parser reads changes its result for at least one of them (a value
 * taken, or an error naming it); one it ignores changes nothing.
 */
const PROBES: readonly unknown[] = [
  [[["probe"]]],
  { probe: { probe: [1] } },
  "probe-text",
  7,
  -1,
  true,
  false,
  [],
  {},
  ["a=b"],
  { a: "b" },
  [{ a: "b" }],
  "*",
];

const NOT_READ = "refused only as an attribute the step does not have";

/**
 * The parse of a pipeline, without the refusals of attributes a kind of step does not have (the parser names every
 * one, packages/ci-rules/src/steps/step-attributes.ts): such an attribute is not read there.
 */
const parseJson = (pipeline: Record<string, unknown>) => {
  const result = parsePipelineYaml(JSON.stringify(pipeline));
  if (result.ok) return JSON.stringify(result);
  const errors = result.errors.filter((e) => !e.code.startsWith("is not an attribute of "));
  return errors.length === 0 ? NOT_READ : JSON.stringify({ ...result, errors });
};

/**
 * Whether `name` selects a step's type (`command`, `wait`, `type`, …): a step holding only that key is a step, or
 * an error about its value, rather than "not a known kind of step". Such keys are not probed on other types of
 * step, where they would change the step's type rather than describe it.
 */
export function selectsStepType(name: string): boolean {
  return PROBES.some((value) => {
    const result = parsePipelineYaml(JSON.stringify({ steps: [{ [name]: value }] }));
    return result.ok || !result.errors.some((e) => /is not a known kind of step|is an empty mapping/.test(e.code));
  });
}

/** The step types on which the parser reads `name`: its base key, or a probe value changes the parse. */
export function typesReading(name: string): StepType[] {
  const selects = selectsStepType(name);
  return STEP_TYPES.filter((type) => {
    if (baseKeys(type).includes(name)) return true;
    if (selects && type !== "pipeline") return false;
    const baseline = parseJson(PIPELINES[type]({}));
    return PROBES.some((value) => {
      const probed = parseJson(PIPELINES[type]({ [name]: value }));
      return probed !== NOT_READ && probed !== baseline;
    });
  });
}

/**
 * Every name the step parser could read: each quoted lower-case identifier in its sources (the parser names the
 * attributes it reads as string literals). Most are not step attributes at all; typesReading tells.
 */
export function parserNames(stepsDir: string): string[] {
  const names = new Set<string>();
  for (const file of readdirSync(stepsDir)) {
    if (!file.endsWith(".ts") || file.endsWith(".test.ts")) continue;
    for (const m of readFileSync(join(stepsDir, file), "utf8").matchAll(/"([a-z][a-z_]*)"/g)) {
      if (m[1]) names.add(m[1]);
    }
  }
  return [...names].sort();
}

/** Folders no citation of the repository's own docs lives in: dependencies, builds, data and caches. */
const SKIPPED_DIRS = new Set(["node_modules", "dist", ".git", ".turbo", ".data", ".test-results", "gen"]);
const TEXT_FILE = /\.(ts|mjs|js|md|ya?ml|proto|go|tpl|txt|hcl)$/;

/** Every text file of the repository's own (not its dependencies', builds' or data's), relative to `root`. */
export function repositoryFiles(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) {
      return SKIPPED_DIRS.has(entry.name) || entry.name.startsWith(".data")
        ? []
        : repositoryFiles(root, join(dir, entry.name));
    }
    return TEXT_FILE.test(entry.name) ? [relative(root, join(dir, entry.name))] : [];
  });
}

/** A citation of a page of docs/ (with an anchor or not), and where it was found. */
export interface DocCitation {
  page: string;
  anchor: string | undefined;
  from: string;
}

/**
 * The citations of docs/ pages in one file: `docs/<page>.md#<anchor>` anywhere (code comments), and in Markdown
 * files their relative links to other pages and to their own headings (`](#anchor)`).
 */
export function citationsIn(file: string, text: string): DocCitation[] {
  const found: DocCitation[] = [];
  for (const m of text.matchAll(/\bdocs\/([a-z0-9-]+\.md)(?:#([a-z0-9_-]+))?/g)) {
    found.push({ page: `docs/${m[1]}`, anchor: m[2], from: file });
  }
  if (file.endsWith(".md")) {
    const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : "";
    for (const m of text.matchAll(/\]\(([^)\s]*)\)/g)) {
      const target = m[1] ?? "";
      if (/^[a-z]+:/.test(target)) continue;
      const [path = "", anchor] = target.split("#");
      if (path !== "" && !path.endsWith(".md")) continue;
      const page = path === "" ? file : join(dir, path);
      found.push({ page, anchor, from: file });
    }
  }
  return found;
}
