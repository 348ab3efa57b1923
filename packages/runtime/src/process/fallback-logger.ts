import type { Logger } from "pino";
import { createLogger } from "./logger.js";

let fallback: Logger | undefined;

/**
 * The logger of a runtime part whose caller passed none: JSON lines like every service's, tagged "runtime", made on
 * first use. It keeps a failure such a part cannot hand back to anyone from going unseen.
 */
export function fallbackLogger(): Pick<Logger, "warn"> {
  fallback ??= createLogger("runtime");
  return fallback;
}
