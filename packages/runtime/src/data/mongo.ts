import { type Db, MongoClient } from "mongodb";
import type { Logger } from "pino";

export interface MongoHandle {
  client: MongoClient;
  db: Db;
  /** Database commands this process has sent, by command name (the driver's command monitoring). */
  commandCounts(): Record<string, number>;
  close(): Promise<void>;
}

/** Connects the process's single MongoClient and selects the service's own database. */
export async function connectMongo(
  url: string,
  dbName: string,
  logger: Logger,
  opts: { maxPoolSize?: number } = {},
): Promise<MongoHandle> {
  const client = new MongoClient(url, {
    // Below the callers' RPC deadline (10 s), so that a call made while the database is unreachable ends as
    // Unavailable (503 at the gateway, see unavailable.ts) rather than as the caller's deadline.
    serverSelectionTimeoutMS: 5_000,
    connectTimeoutMS: 10_000,
    maxPoolSize: opts.maxPoolSize ?? 20,
    appName: dbName,
    monitorCommands: true,
  });
  // Counted so that a benchmark (or an operator) can see how many round trips a request costs; a counter per
  // command name is all it keeps.
  const counts = new Map<string, number>();
  client.on("commandStarted", (event) => counts.set(event.commandName, (counts.get(event.commandName) ?? 0) + 1));
  if (logger.isLevelEnabled("trace")) {
    // LOG_LEVEL=trace: every command with what it asked and how long it took, to find what loads the database.
    const asked = new Map<number, unknown>();
    client.on("commandStarted", (e) => {
      const { lsid: _l, $db: _d, $clusterTime: _c, documents, updates, ...command } = e.command;
      asked.set(e.requestId, {
        ...command,
        ...(documents ? { documents: documents.length } : {}),
        ...(updates ? { updates: updates.length } : {}),
      });
    });
    const done = (e: { requestId: number; commandName: string; duration: number }, ok: boolean) => {
      logger.trace({ command: e.commandName, ms: e.duration, ok, asked: asked.get(e.requestId) }, "mongo command");
      asked.delete(e.requestId);
    };
    client.on("commandSucceeded", (e) => done(e, true));
    client.on("commandFailed", (e) => done(e, false));
  }
  await client.connect();
  const db = client.db(dbName);
  await db.command({ ping: 1 });
  logger.info({ db: dbName }, "connected to MongoDB");
  return { client, db, commandCounts: () => Object.fromEntries(counts), close: () => client.close() };
}
