/**
 * A small reader of Dockerfiles, enough to check deploy/Dockerfile's rules in tests (dockerfile.test.ts): the
 * stages, each with its instructions (continuation lines joined, comments and parser directives dropped).
 */

export interface Instruction {
  /** Upper-case keyword: FROM, RUN, COPY, USER, … */
  readonly keyword: string;
  /** Everything after the keyword, continuation lines joined with a space. */
  readonly args: string;
  /** 1-based line where the instruction starts. */
  readonly line: number;
}

export interface Stage {
  /** The stage's name (`FROM … AS name`), or its index when unnamed. */
  readonly name: string;
  /** The image or stage it starts from, as written (build arguments not expanded). */
  readonly from: string;
  readonly instructions: readonly Instruction[];
}

export interface Dockerfile {
  /** ARG instructions before the first FROM. */
  readonly globalArgs: readonly Instruction[];
  readonly stages: readonly Stage[];
}

/** The instructions of a Dockerfile, in order. */
export function instructionsOf(text: string): Instruction[] {
  const lines = text.split(/\r?\n/);
  const out: Instruction[] = [];
  let pending: { parts: string[]; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] as string;
    const trimmed = raw.trim();
    // Comments (and parser directives such as `# syntax=`) are whole lines, also inside a continued instruction.
    if (trimmed.startsWith("#")) continue;
    if (!pending && trimmed === "") continue;
    const continued = trimmed.endsWith("\\");
    const part = continued ? trimmed.slice(0, -1).trim() : trimmed;
    if (!pending) pending = { parts: [], line: i + 1 };
    if (part !== "") pending.parts.push(part);
    if (continued) continue;
    const joined = pending.parts.join(" ");
    const match = /^(\S+)\s*(.*)$/s.exec(joined);
    if (match) out.push({ keyword: (match[1] as string).toUpperCase(), args: match[2] as string, line: pending.line });
    pending = undefined;
  }
  return out;
}

/** The Dockerfile's global ARGs and its stages. */
export function parseDockerfile(text: string): Dockerfile {
  const globalArgs: Instruction[] = [];
  const stages: Array<{ name: string; from: string; instructions: Instruction[] }> = [];
  for (const instruction of instructionsOf(text)) {
    if (instruction.keyword === "FROM") {
      const words = instruction.args.split(/\s+/).filter((w) => !w.startsWith("--"));
      const as = words.findIndex((w) => w.toUpperCase() === "AS");
      stages.push({
        name: as >= 0 ? (words[as + 1] ?? String(stages.length)) : String(stages.length),
        from: words[0] ?? "",
        instructions: [],
      });
    } else if (stages.length === 0) {
      if (instruction.keyword === "ARG") globalArgs.push(instruction);
    } else {
      stages[stages.length - 1]?.instructions.push(instruction);
    }
  }
  return { globalArgs, stages };
}

/** A stage by name; throws when there is none, naming the stages there are. */
export function stageOf(file: Dockerfile, name: string): Stage {
  const stage = file.stages.find((s) => s.name === name);
  if (!stage) throw new Error(`no stage ${name}; stages: ${file.stages.map((s) => s.name).join(", ")}`);
  return stage;
}

/**
 * The stages a stage is built on, itself first: its FROM chain through other stages (`FROM deps AS service`), as
 * Docker applies instructions of a base stage before the stage's own.
 */
export function lineageOf(file: Dockerfile, name: string): Stage[] {
  const chain: Stage[] = [];
  let current: Stage | undefined = stageOf(file, name);
  while (current && !chain.includes(current)) {
    chain.push(current);
    const from: string = current.from;
    current = file.stages.find((s) => s.name === from);
  }
  return chain;
}

/** The last instruction with this keyword a stage has, its base stages included (USER, CMD, STOPSIGNAL, …). */
export function effective(file: Dockerfile, stage: string, keyword: string): Instruction | undefined {
  for (const s of lineageOf(file, stage)) {
    const found = [...s.instructions].reverse().find((i) => i.keyword === keyword);
    if (found) return found;
  }
  return undefined;
}
