import { existsSync, mkdtempSync } from "node:fs";
import Module from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { Stack } from "@conveyor/deploy";

/** What globalSetup hands to globalTeardown; both run in Jest's main process, so a global carries it. */
export interface TestStackState {
  stack: Stack;
  dataDir: string;
  onSignal: (signal: NodeJS.Signals) => void;
}

export const TEST_STACK_KEY = "__conveyorTestStack";

/**
 * Jest's globalSetup runs outside the test sandbox: its moduleNameMapper does not apply here. So that the launcher
 * runs from its TypeScript sources like the tests do, map the same imports Node's way: `./x.js` written in a .ts file
 * to `./x.ts`, and the workspace packages to their src/ (Jest's require hook then transforms the .ts files).
 */
function resolveFromSources(repoRoot: string): void {
  const loader = Module as unknown as {
    _resolveFilename(request: string, parent: { filename?: string } | undefined, ...rest: unknown[]): string;
  };
  const original = loader._resolveFilename;
  loader._resolveFilename = function (request, parent, ...rest) {
    let mapped: string | undefined;
    const proto = /^@conveyor\/proto\/([\w-]+)$/.exec(request);
    const workspacePackage = /^@conveyor\/([\w-]+)$/.exec(request)?.[1];
    if (proto) mapped = join(repoRoot, "proto/src", `${proto[1]}.ts`);
    else if (workspacePackage === "deploy") mapped = join(repoRoot, "deploy/src/index.ts");
    else if (workspacePackage) mapped = join(repoRoot, "packages", workspacePackage, "src/index.ts");
    else if (/^\.{1,2}\//.test(request) && request.endsWith(".js") && parent?.filename?.endsWith(".ts")) {
      const candidate = resolve(dirname(parent.filename), `${request.slice(0, -3)}.ts`);
      if (existsSync(candidate)) mapped = candidate;
    }
    return original.call(this, mapped ?? request, parent, ...rest);
  };
}

/**
 * Starts an isolated stack on free ports with a temporary data directory, bootstraps it, and exports its addresses.
 * It starts no local agent (unlike `npm start`): suites that need agents start their own (CONVEYOR_AGENT_BIN).
 */
export default async function globalSetup(_globalConfig: unknown, projectConfig: { rootDir: string }): Promise<void> {
  const repoRoot = projectConfig.rootDir;
  resolveFromSources(repoRoot);
  const { bootstrapStack, startStack } = await import("@conveyor/deploy");
  const dataDir = mkdtempSync(join(tmpdir(), "conveyor-test-"));
  const log = (line: string) => process.stderr.write(`[test stack] ${line}\n`);
  log(`starting an isolated stack on free ports, data in ${dataDir}`);

  // Ctrl-C or a SIGTERM to Jest must not leave the stack behind: stop it, then die of the same signal.
  const controller = new AbortController();
  let stack: Stack | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    controller.abort();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    void (stack?.stop() ?? Promise.resolve()).finally(() => process.kill(process.pid, signal));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  const started = Date.now();
  // Agents in the suites ping every second (the service's default is 2 s), so that builds on real agents start fast,
  // and heartbeat every 2 s with a 6 s lost window (defaults 10 s and 60 s), so that a killed agent is noticed soon.
  // The suites share the bootstrap organization and user, and poll: a limit far above what they send keeps the
  // rate-limit headers on every answer without a 429 (test/rate-limit.e2e.test.ts runs gateways with a small one).
  const env = {
    AGENT_PING_INTERVAL_S: "1",
    AGENT_HEARTBEAT_INTERVAL_S: "2",
    AGENT_LOST_AFTER_S: "6",
    RATE_LIMIT_PER_MINUTE: "100000",
    // The suites' forges and receivers (a Gitea, webhook receivers) listen on loopback, which outbound requests may
    // reach only when allowed (docs/security.md#outbound-requests); other internal addresses stay refused.
    OUTBOUND_ALLOW_HOSTS: "127.0.0.1",
    ...process.env,
  };
  stack = await startStack({ repoRoot, dataDir, ports: "free", env, log, signal: controller.signal });
  const state: TestStackState = { stack, dataDir, onSignal };
  Object.assign(globalThis, { [TEST_STACK_KEY]: state });
  try {
    const { credentials } = await bootstrapStack(stack.info);
    const info = stack.info;
    // Which MongoDB-wire server runs: the suites that need the bundled FerretDB are reported as not run with another
    // (test/support/ferretdb.ts).
    const { describeMongoServer, MONGO_SERVER_VAR } = await import("../support/ferretdb.js");
    const { MongoClient } = await import("mongodb");
    const mongo = await new MongoClient(info.mongodbUrl).connect();
    const mongoServer = await describeMongoServer(mongo).finally(() => mongo.close());
    log(`MongoDB-wire server: ${mongoServer}`);
    Object.assign(process.env, {
      [MONGO_SERVER_VAR]: mongoServer,
      CONVEYOR_API_URL: info.apiUrl,
      CONVEYOR_AGENT_URL: info.agentUrl,
      // The agent API on the gateway's TLS port, where the agents suites start stream their pings (HTTP/2).
      CONVEYOR_AGENT_TLS_URL: info.agentTlsUrl ?? "",
      CONVEYOR_AGENT_TRUST_FILE: info.trustFile ?? "",
      CONVEYOR_API_TOKEN: credentials.apiToken.secret,
      CONVEYOR_AGENT_TOKEN: credentials.agentToken.secret,
      CONVEYOR_ORG_SLUG: credentials.organization.slug,
      CONVEYOR_ORG_ID: credentials.organization.id,
      CONVEYOR_USER_ID: credentials.user.id,
      CONVEYOR_TEST_DATA_DIR: dataDir,
      // The stack starts no agent: suites start their own with this binary, in this cluster (the agent token's).
      CONVEYOR_AGENT_BIN: info.agentBin,
      CONVEYOR_CLUSTER_ID: credentials.cluster.id,
      IDENTITY_URL: info.serviceUrls.identity,
      PIPELINES_URL: info.serviceUrls.pipelines,
      BUILDS_URL: info.serviceUrls.builds,
      ARTIFACTS_URL: info.serviceUrls.artifacts,
      AGENTS_URL: info.serviceUrls.agents,
      NOTIFICATIONS_URL: info.serviceUrls.notifications,
      MONGODB_URL: info.mongodbUrl,
      NATS_URL: info.natsUrl,
      S3_ENDPOINT: info.s3.endpoint,
      S3_ACCESS_KEY: info.s3.accessKey,
      S3_SECRET_KEY: info.s3.secretKey,
      S3_BUCKET: info.s3.bucket,
      S3_REGION: info.s3.region,
    });
  } catch (err) {
    await stack.stop();
    throw err;
  }
  log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s at ${stack.info.apiUrl}`);
}
