/** Makes the tail of a process log readable: pino JSON lines become "LEVEL message (error)". */
export function formatLogTail(tail: string): string {
  return tail
    .split("\n")
    .map((line) => {
      if (!line.startsWith("{")) return line;
      try {
        const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string; type?: string } };
        const level = LEVELS[entry.level ?? 30] ?? String(entry.level);
        const err = entry.err?.message ? ` (${entry.err.type ?? "Error"}: ${entry.err.message})` : "";
        return `${level} ${entry.msg ?? ""}${err}`;
      } catch {
        return line;
      }
    })
    .join("\n");
}

const LEVELS: Record<number, string> = { 10: "TRACE", 20: "DEBUG", 30: "INFO", 40: "WARN", 50: "ERROR", 60: "FATAL" };
