// `npm run fuzz`: install what is missing, build, then run the fuzz suites (test/fuzz.e2e.test.ts, the REST API, and
// test/fuzz-agent.e2e.test.ts, the agent API) longer than CI does, on an isolated stack that Jest's global setup
// starts. FUZZ_SECONDS (default 600) bounds the REST fuzzing and FUZZ_AGENT_SECONDS (default half of it) the agent
// API's; FUZZ_SEED (default: a random one, printed) makes a run repeatable: `FUZZ_SEED=<seed> npm run fuzz` sends the
// same requests.
import { join } from "node:path";
import { installAndBuild, repoRoot, run, say } from "./prepare.mjs";

const seconds = Number(process.env.FUZZ_SECONDS ?? 600);
const agentSeconds = Number(process.env.FUZZ_AGENT_SECONDS ?? Math.ceil(seconds / 2));
const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
if (!Number.isFinite(seconds) || seconds <= 0 || !(agentSeconds > 0) || !Number.isInteger(seed)) {
  process.stderr.write("fuzz: FUZZ_SECONDS and FUZZ_AGENT_SECONDS must be positive numbers and FUZZ_SEED an integer\n");
  process.exit(2);
}

const built = await installAndBuild();
if (built !== 0) process.exit(built);
say(
  `fuzzing every REST operation for ${seconds} s and every agent API operation for ${agentSeconds} s with ` +
    `FUZZ_SEED=${seed} (repeat a run with the same seed)`,
);
const code = await run(
  process.execPath,
  [
    join(repoRoot, "node_modules", "jest", "bin", "jest.js"),
    "--selectProjects",
    "stack",
    "--testPathPatterns",
    "test/fuzz(-agent)?\\.e2e\\.test\\.ts$",
    ...process.argv.slice(2),
  ],
  {
    env: {
      ...process.env,
      FUZZ_SECONDS: String(seconds),
      FUZZ_AGENT_SECONDS: String(agentSeconds),
      FUZZ_SEED: String(seed),
    },
  },
);
say(`fuzz: FUZZ_SEED=${seed} ${code === 0 ? "passed" : `FAILED (exit ${code})`}`);
process.exit(code);
