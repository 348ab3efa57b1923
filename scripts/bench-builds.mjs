// `npm run bench:builds`: a page of builds with 100 vs 100,000 builds in the database, same run (deploy/src/bench/bench-builds.ts).
import { pathToFileURL } from "node:url";
import { installAndBuild, repoRoot } from "./prepare.mjs";

const built = await installAndBuild();
if (built !== 0) process.exit(built);
const { runBuildsBench } = await import(pathToFileURL(`${repoRoot}/deploy/dist/bench/bench-builds.js`).href);
try {
  process.exit(await runBuildsBench(repoRoot));
} catch (err) {
  process.stderr.write(`bench:builds: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
}
