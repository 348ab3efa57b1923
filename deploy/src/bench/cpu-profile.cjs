// Preloaded into the stack's Node processes by `BENCH_PROFILE=<dir> npm run bench` (NODE_OPTIONS=--require, since
// --cpu-prof is refused there): each SIGUSR2 toggles a CPU profile of the process, sampled every 500 µs, and the
// second writes it to CONVEYOR_PROFILE_DIR as <process>-<pid>-<n>.cpuprofile (Chrome DevTools and speedscope open
// it). deploy/src/bench/cpu-profiles.ts sends the signals around a measured phase and names the files after it.
"use strict";
const dir = process.env.CONVEYOR_PROFILE_DIR;
if (dir) {
  const inspector = require("node:inspector");
  const fs = require("node:fs");
  const path = require("node:path");
  const main = process.argv[1] ?? "";
  const match = /([\w-]+)[\\/]dist[\\/]main\.js$/.exec(main);
  const name = match ? match[1] : path.basename(main, ".js") || "node";
  const session = new inspector.Session();
  session.connect();
  let running = false;
  let written = 0;
  process.on("SIGUSR2", () => {
    if (!running) {
      running = true;
      session.post("Profiler.enable", () =>
        session.post("Profiler.setSamplingInterval", { interval: 500 }, () => session.post("Profiler.start")),
      );
      return;
    }
    running = false;
    session.post("Profiler.stop", (err, result) => {
      if (err) return;
      written++;
      const file = path.join(dir, `${name}-${process.pid}-${written}.cpuprofile`);
      fs.writeFileSync(`${file}.part`, JSON.stringify(result.profile));
      fs.renameSync(`${file}.part`, file);
    });
  });
}
