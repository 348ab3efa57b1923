/**
 * The launcher and the tooling around it, one folder per concept (the programs are `cli.ts`, the `npm start`
 * launcher, and `k8s-bootstrap-main.ts`, the Helm chart's bootstrap Job):
 * - `stack/`: starting and stopping a whole stack (servers, services, replicas and their balancers, local agents);
 * - `ports/`: the stack's ports, from the environment or free ones reserved across processes;
 * - `host/`: this machine: child processes, environment values and the repository's and data's directories;
 * - `tools/`: the servers' binaries (FerretDB, NATS, versitygw, buildkite-agent), found or built with Go;
 * - `forge/`: a headless Gitea for the webhook tests and `CONVEYOR_FORGE=gitea`, and helpers to drive it;
 * - `bootstrap/`: the first organization, admin, tokens and cluster, their credentials file, the first-build guide;
 * - `logs/`: reading processes' logs (tails for the console, leaked secrets);
 * - `rest/`: a small REST client for the drills;
 * - `bench/` (`npm run bench`, `npm run bench:builds`) and `faults/` (`npm run faults`): the drills;
 * - `k8s/`: the Helm chart's bootstrap and the rules the chart and the Dockerfile are checked against.
 * Tests and the test stack import only from here.
 */
export * from "./bootstrap/bootstrap.js";
export * from "./bootstrap/credentials.js";
export * from "./bootstrap/first-build.js";
export * from "./bootstrap/scopes.js";
export * from "./forge/gitea.js";
export * from "./forge/gitea-api.js";
export * from "./forge/gitea-config.js";
export * from "./forge/local-forge.js";
export * from "./host/child.js";
export * from "./host/paths.js";
export * from "./logs/log-format.js";
export * from "./logs/secret-scan.js";
export * from "./ports/ports.js";
export * from "./rest/lenient-json.js";
export * from "./stack/balancer.js";
export * from "./stack/local-agents.js";
export * from "./stack/replicas.js";
export * from "./stack/servers.js";
export * from "./stack/services.js";
export * from "./stack/stack.js";
export * from "./stack/stack-file.js";
export * from "./stack/stack-info.js";
export * from "./stack/supervisor.js";
export * from "./stack/wait.js";
export * from "./tools/go-build.js";
export * from "./tools/tools.js";
