import { rmSync } from "node:fs";
import type { TestStackState } from "./global-setup.js";

const KEEP_DATA_VAR = "CONVEYOR_KEEP_TEST_DATA";

/** Stops the test stack and removes its data, unless CONVEYOR_KEEP_TEST_DATA=1 asks to keep it for inspection. */
export default async function globalTeardown(): Promise<void> {
  // The same key as TEST_STACK_KEY in global-setup.ts (a value import from there would load that module again).
  const holder = globalThis as { __conveyorTestStack?: TestStackState };
  const state = holder.__conveyorTestStack;
  delete holder.__conveyorTestStack;
  if (!state) return;
  process.off("SIGINT", state.onSignal);
  process.off("SIGTERM", state.onSignal);
  await state.stack.stop();
  if (process.env[KEEP_DATA_VAR] === "1") {
    process.stderr.write(`[test stack] data and logs kept in ${state.dataDir}\n`);
  } else {
    rmSync(state.dataDir, { recursive: true, force: true });
  }
}
