// `npm run bench`: install what is missing, build, then measure a Fastify hello-world and the gateway's routes
// (deploy/src/bench/bench-routes.ts) with autocannon, interleaved, on an isolated stack or the one in CONVEYOR_API_URL.
import { pathToFileURL } from "node:url";
import { installAndBuild, repoRoot } from "./prepare.mjs";

const built = await installAndBuild();
if (built !== 0) process.exit(built);
const { runBench } = await import(pathToFileURL(`${repoRoot}/deploy/dist/bench/bench.js`).href);
try {
  process.exit(await runBench(repoRoot));
} catch (err) {
  process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
