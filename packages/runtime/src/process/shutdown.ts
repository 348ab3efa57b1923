import type { Logger } from "pino";

/**
 * Runs the given steps once, in order, on SIGINT or SIGTERM, then exits. A second signal exits at once.
 * Returns the function that runs them, so a caller can also trigger it.
 */
export function onShutdown(logger: Logger, steps: Array<() => Promise<void>>): () => Promise<void> {
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    logger.info("shutting down");
    let code = 0;
    for (const step of steps) {
      try {
        await step();
      } catch (err) {
        code = 1;
        logger.error({ err }, "shutdown step failed");
      }
    }
    logger.info("stopped");
    process.exit(code);
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (running) process.exit(1);
      void run();
    });
  }
  return run;
}
