// `npm run faults`: install what is missing, build, then kill -9 and restart the MongoDB-wire server, NATS and the
// S3 store in turn under real agents running builds, and check the invariants (deploy/src/faults/faults.ts).
import { pathToFileURL } from "node:url";
import { installAndBuild, repoRoot } from "./prepare.mjs";

const built = await installAndBuild();
if (built !== 0) process.exit(built);
const { runFaults } = await import(pathToFileURL(`${repoRoot}/deploy/dist/faults/faults.js`).href);
try {
  process.exit(await runFaults(repoRoot));
} catch (err) {
  process.stderr.write(`faults: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
}
