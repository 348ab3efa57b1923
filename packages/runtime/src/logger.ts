import { type Logger, pino } from "pino";

export type { Logger } from "pino";

/** Creates the process's structured JSON logger, tagged with the service name. */
export function createLogger(service: string, level = "info"): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
