import { join } from "node:path";
import { getFreePort, type ManagedProcess, spawnManaged } from "@conveyor/deploy";
import { NotificationsService } from "@conveyor/proto/notifications";
import { createServiceClient } from "@conveyor/runtime";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { stack, unique } from "./stack-env.js";
import { eventually } from "./webhook-receiver.js";

/**
 * A notifications process of a suite's own beside the stack's: its own database, hence its own durable consumers
 * (docs/notifications.md), with the settings the suite gives (OUTBOUND_ALLOW_HOSTS, SMTP_URL, short leases…). It can
 * be killed and started again; `remove()` stops it and deletes its consumers.
 */
export async function startNotificationsProcess(env: Record<string, string>) {
  const repoRoot = join(__dirname, "..", "..");
  const database = `notify_${unique("t").replace(/-/g, "_")}`;
  const port = await getFreePort();
  const healthPort = await getFreePort();
  let proc: ManagedProcess | undefined;
  const start = async () => {
    proc = spawnManaged({
      name: "notifications-suite",
      command: process.execPath,
      args: ["--enable-source-maps", join(repoRoot, "services/notifications/dist/main.js")],
      env: {
        ...process.env,
        HOST: "127.0.0.1",
        PORT: String(port),
        HEALTH_PORT: String(healthPort),
        MONGODB_DATABASE: database,
        // The links in what it sends are the stack gateway's, as the launcher tells the stack's own.
        PUBLIC_URL: stack.apiUrl,
        LOG_LEVEL: "warn",
        NODE_ENV: "production",
        ...env,
      },
      cwd: repoRoot,
      logFile: join(process.env.CONVEYOR_TEST_DATA_DIR ?? "/tmp", `${database}.log`),
      detached: false,
    });
    await eventually(
      "the suite's notifications process",
      async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => null))?.status === 200,
      60_000,
    );
  };
  await start();
  return {
    client: createServiceClient(NotificationsService, `http://127.0.0.1:${port}`),
    start,
    /** SIGKILL, and wait until it is gone. */
    async kill() {
      proc?.killNow();
      await proc?.exited;
    },
    async remove() {
      await proc?.stop(5_000);
      const nc = await connect({ servers: process.env.NATS_URL ?? "" });
      const jsm = await jetstreamManager(nc);
      for (const kind of ["builds", "agents"]) {
        await jsm.consumers.delete("CI_EVENTS", `notifications-${database}-${kind}`).catch(() => undefined);
      }
      await nc.close();
    },
  };
}
