/**
 * A command step's build matrix (docs/compatibility.md#build-matrix): its combinations, Buildkite's limits, and the
 * `{{matrix}}` / `{{matrix.<dimension>}}` interpolation that turns the step into one step per combination. Pure.
 *
 * - Combinations: the cartesian product of `setup`'s dimensions in the order written (the first dimension varies
 *   slowest), then the adjustments whose `with` is not a combination of the setup, in their order (they add jobs).
 *   An adjustment with `skip` (true or a reason) removes its combination; `soft_fail` replaces the step's for it.
 * - Interpolation: `{{ matrix }}` (the single list form) and `{{ matrix.<dimension> }}`, spaces inside the braces
 *   allowed, in the label, the command, env values (not names), agents and plugins (names and settings). A token
 *   naming no dimension of the matrix is refused, and so is a token in an attribute Buildkite does not interpolate
 *   (key, concurrency_group, artifact_paths, if).
 * - Limits (Buildkite's): 6 dimensions, 20 values per dimension, 12 adjustments, 50 jobs per matrix step.
 */
import type { ScriptStep, StepError, StepMatrix } from "./step.js";

export const MATRIX_LIMITS = {
  maxDimensions: 6,
  maxValuesPerDimension: 20,
  maxAdjustments: 12,
  maxJobs: 50,
} as const;

/** One combination: dimension → value; the single list form's dimension is "". */
export type MatrixPermutation = Record<string, string>;

/** One job of a matrix step: its combination, and the step as that job runs it. */
export interface MatrixJob {
  permutation: MatrixPermutation;
  /** The step with its tokens replaced, `soft_fail` adjusted and no `matrix`. */
  step: ScriptStep;
}

/** As go-pipeline matches them: `{{`, spaces, `matrix`, maybe `.dimension`, spaces, `}}`. */
const TOKEN = /\{\{\s*matrix(\.[\w.-]+)?\s*\}\}/g;

/** Attributes whose `{{matrix}}` tokens are replaced. */
const INTERPOLATED = "label, command, env, agents and plugins";

const sameCombination = (a: MatrixPermutation, b: MatrixPermutation): boolean => {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
};

/** The combinations a matrix makes, with the soft_fail an adjustment gives each; skipped ones left out. */
export function matrixCombinations(
  matrix: StepMatrix,
): Array<{ permutation: MatrixPermutation; soft_fail?: true | Array<number | "*"> }> {
  let product: MatrixPermutation[] = [{}];
  for (const [dimension, values] of Object.entries(matrix.setup)) {
    const next: MatrixPermutation[] = [];
    for (const partial of product) for (const value of values) next.push({ ...partial, [dimension]: value });
    product = next;
  }
  const adjustments = matrix.adjustments ?? [];
  const added = adjustments.filter((a) => !product.some((c) => sameCombination(c, a.with))).map((a) => a.with);
  const out: Array<{ permutation: MatrixPermutation; soft_fail?: true | Array<number | "*"> }> = [];
  for (const permutation of [...product, ...added]) {
    if (out.some((o) => sameCombination(o.permutation, permutation))) continue;
    const adjustment = adjustments.find((a) => sameCombination(a.with, permutation));
    if (adjustment?.skip !== undefined && adjustment.skip !== false) continue;
    const entry: { permutation: MatrixPermutation; soft_fail?: true | Array<number | "*"> } = {
      permutation: { ...permutation },
    };
    if (adjustment?.soft_fail !== undefined) entry.soft_fail = adjustment.soft_fail;
    out.push(entry);
  }
  return out;
}

/** `text` with its matrix tokens replaced from `permutation`; tokens naming no dimension are left as they are. */
export function interpolateMatrix(text: string, permutation: MatrixPermutation): string {
  return text.replace(TOKEN, (token, dotted: string | undefined) => {
    const value = permutation[dotted === undefined ? "" : dotted.slice(1)];
    return value === undefined ? token : value;
  });
}

/** The dimensions the tokens of `text` name ("" for `{{matrix}}`). */
function tokensOf(text: string): string[] {
  return [...text.matchAll(TOKEN)].map((m) => (m[1] === undefined ? "" : m[1].slice(1)));
}

function mapStrings(value: unknown, f: (s: string) => string): unknown {
  if (typeof value === "string") return f(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f));
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[f(k)] = mapStrings(v, f);
    return out;
  }
  return value;
}

function stringsOf(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) stringsOf(v, out);
  else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      stringsOf(v, out);
    }
  }
  return out;
}

/** The step one combination runs: tokens replaced, the adjustment's soft_fail, no `matrix`. */
export function stepForCombination(
  step: ScriptStep,
  permutation: MatrixPermutation,
  softFail?: true | Array<number | "*">,
): ScriptStep {
  const f = (s: string) => interpolateMatrix(s, permutation);
  const { matrix: _matrix, ...rest } = step;
  const out: ScriptStep = {
    ...structuredClone(rest),
    name: f(step.name),
    command: f(step.command),
    agent_query_rules: step.agent_query_rules.map(f),
  };
  if (step.env) out.env = Object.fromEntries(Object.entries(step.env).map(([k, v]) => [k, f(v)]));
  if (step.plugins) out.plugins = mapStrings(step.plugins, f) as ScriptStep["plugins"];
  if (softFail !== undefined) out.soft_fail = softFail === true ? true : [...softFail];
  return out;
}

/** The jobs of a matrix step, in order; null for a step without `matrix`. */
export function expandMatrix(step: ScriptStep): MatrixJob[] | null {
  if (!step.matrix) return null;
  return matrixCombinations(step.matrix).map(({ permutation, soft_fail }) => ({
    permutation,
    step: stepForCombination(step, permutation, soft_fail),
  }));
}

/** How many jobs a step makes: its matrix's combinations, else its parallelism, else one. */
export function matrixJobCount(step: ScriptStep): number {
  return step.matrix ? matrixCombinations(step.matrix).length : 1;
}

/**
 * Why a parsed matrix step cannot be expanded (on `field`, the step's): Buildkite's limits, tokens naming no
 * dimension, tokens where they are not replaced.
 */
export function matrixProblems(step: ScriptStep, field: string): StepError[] {
  const matrix = step.matrix;
  if (!matrix) return [];
  const errors: StepError[] = [];
  const dims = Object.keys(matrix.setup);
  if (dims.length > MATRIX_LIMITS.maxDimensions) {
    errors.push({
      field: `${field}.matrix.setup`,
      code: `has ${dims.length} dimensions; a matrix may have at most ${MATRIX_LIMITS.maxDimensions}`,
    });
  }
  for (const [dim, values] of Object.entries(matrix.setup)) {
    if (values.length > MATRIX_LIMITS.maxValuesPerDimension) {
      errors.push({
        field: dim === "" ? `${field}.matrix` : `${field}.matrix.setup.${dim}`,
        code: `has ${values.length} values; a matrix dimension may have at most ${MATRIX_LIMITS.maxValuesPerDimension}`,
      });
    }
  }
  const adjustments = matrix.adjustments?.length ?? 0;
  if (adjustments > MATRIX_LIMITS.maxAdjustments) {
    errors.push({
      field: `${field}.matrix.adjustments`,
      code: `has ${adjustments} adjustments; a matrix may have at most ${MATRIX_LIMITS.maxAdjustments}`,
    });
  }
  if (errors.length === 0) {
    const jobs = matrixCombinations(matrix).length;
    if (jobs > MATRIX_LIMITS.maxJobs) {
      errors.push({
        field: `${field}.matrix`,
        code: `makes ${jobs} jobs; a matrix step may make at most ${MATRIX_LIMITS.maxJobs}`,
      });
    } else if (jobs === 0) {
      errors.push({ field: `${field}.matrix`, code: "skips every combination, so the step would make no jobs" });
    }
  }
  const known = new Set(dims);
  const describe = (d: string) => (d === "" ? "{{matrix}}" : `{{matrix.${d}}}`);
  const checkUnknown = (attribute: string, texts: string[]) => {
    const unknown = [...new Set(texts.flatMap(tokensOf).filter((d) => !known.has(d)))];
    if (unknown.length === 0) return;
    const expected =
      dims.length === 1 && dims[0] === ""
        ? "this matrix is a plain list: write {{matrix}}"
        : `this matrix's dimensions are ${dims.map((d) => describe(d)).join(", ")}`;
    errors.push({
      field: `${field}.${attribute}`,
      code: `uses ${unknown.map(describe).join(", ")}, which the matrix does not define; ${expected}`,
    });
  };
  checkUnknown("label", [step.name]);
  checkUnknown("command", [step.command]);
  checkUnknown("env", Object.values(step.env ?? {}));
  checkUnknown("agents", step.agent_query_rules);
  checkUnknown("plugins", stringsOf(step.plugins ?? []));
  const notReplaced: Array<[string, string | undefined]> = [
    ["key", step.key],
    ["concurrency_group", step.concurrency_group],
    ["artifact_paths", step.artifact_paths],
    ["if", step.if],
    ...Object.keys(step.env ?? {}).map((k): [string, string] => [`env.${k}`, k]),
  ];
  for (const [attribute, text] of notReplaced) {
    if (text !== undefined && tokensOf(text).length > 0) {
      errors.push({
        field: `${field}.${attribute}`,
        code: `cannot use matrix values: Buildkite replaces {{matrix}} only in ${INTERPOLATED} (env values, not names)`,
      });
    }
  }
  return errors;
}
