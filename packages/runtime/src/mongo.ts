import { type Db, MongoClient } from "mongodb";
import type { Logger } from "pino";

export interface MongoHandle {
  client: MongoClient;
  db: Db;
  close(): Promise<void>;
}

/** Connects the process's single MongoClient and selects the service's own database. */
export async function connectMongo(url: string, dbName: string, logger: Logger): Promise<MongoHandle> {
  const client = new MongoClient(url, {
    serverSelectionTimeoutMS: 10_000,
    connectTimeoutMS: 10_000,
    maxPoolSize: 20,
    appName: dbName,
  });
  await client.connect();
  const db = client.db(dbName);
  await db.command({ ping: 1 });
  logger.info({ db: dbName }, "connected to MongoDB");
  return { client, db, close: () => client.close() };
}
