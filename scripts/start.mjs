// `npm start`: install what is missing, build, then run the whole stack in the foreground until Ctrl-C or SIGTERM.
import { pathToFileURL } from "node:url";
import { installAndBuild, repoRoot } from "./prepare.mjs";

const built = await installAndBuild();
if (built !== 0) process.exit(built);

// The launcher runs in this process, so that a signal to `npm start` reaches it directly.
const { main } = await import(pathToFileURL(`${repoRoot}/deploy/dist/cli.js`).href);
process.exit(await main(["start"], repoRoot));
