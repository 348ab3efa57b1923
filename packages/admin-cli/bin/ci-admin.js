#!/usr/bin/env node
// Thin launcher: the CLI itself is compiled TypeScript in dist/.
import("../dist/main.js").catch((err) => {
  if (err?.code === "ERR_MODULE_NOT_FOUND") {
    process.stderr.write(
      "ci-admin: not built yet. Run `npm run build` (or `npm start`) at the repository root first.\n",
    );
  } else {
    process.stderr.write(`ci-admin: ${err?.stack ?? err}\n`);
  }
  process.exit(1);
});
