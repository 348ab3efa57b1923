// `npm start`: install what is missing, build, then run the whole stack in the foreground until Ctrl-C or SIGTERM.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { installAndBuild, repoRoot } from "./prepare.mjs";

// A second `npm start` while one runs says so before it rebuilds anything under the running stack. (In a child
// process: importing the launcher here would keep its pre-build modules in this process's module cache.)
const cli = `${repoRoot}/deploy/dist/cli.js`;
if (existsSync(cli) && spawnSync(process.execPath, [cli, "check"], { stdio: "inherit" }).status === 1) {
  process.exit(1);
}

const built = await installAndBuild();
if (built !== 0) process.exit(built);

// The launcher runs in this process, so that a signal to `npm start` reaches it directly.
const { main } = await import(pathToFileURL(cli).href);
process.exit(await main(["start"], repoRoot));
