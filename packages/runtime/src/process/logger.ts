import { type DestinationStream, type Logger, pino } from "pino";
import { currentRequestId } from "../rpc/request-context.js";

export type { Logger } from "pino";

/**
 * Creates the process's structured JSON logger, tagged with the service name; a line written while a request is
 * served names its `requestId`.
 */
export function createLogger(service: string, level = "info", destination?: DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin: () => {
      const requestId = currentRequestId();
      return requestId === undefined ? {} : { requestId };
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
