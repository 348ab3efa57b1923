/**
 * The builds service over MongoDB for the builds service's integration tests: the databases a test file makes on
 * the test stack's server (MONGODB_URL), and the service as one process of it would be, served to a Connect client
 * in memory.
 */
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { BuildsService } from "@conveyor/proto/builds";
import { createLogger } from "@conveyor/runtime";
import { type Db, MongoClient, type MongoClientOptions } from "mongodb";
import { type BuildsDeps, type BuildsParts, createBuildsParts } from "./builds-context.js";
import { createBuildsService } from "./builds-service.js";
import { type BuildRepository, createMongoBuildRepository } from "./store/build-repository.js";
import { createMongoConcurrencySlotRepository } from "./store/concurrency-slot-repository.js";
import { createMongoJobLogRepository } from "./store/job-log-repository.js";
import {
  createMongoPipelineUploadRepository,
  type PipelineUploadRepository,
} from "./store/pipeline-upload-repository.js";

/** A Connect client of the BuildsService. */
export type BuildsClient = Client<typeof BuildsService>;

/** The connection of a test file and the databases it made, each dropped when it closes. */
export interface TestDatabases {
  /** Connects to MONGODB_URL (in beforeAll). */
  connect(): Promise<void>;
  /** The connection, once connected. */
  readonly mongo: MongoClient;
  /** A new database named after the file's prefix. */
  create(): Db;
  /** Drops every database made and closes the connection (in afterAll). */
  close(): Promise<void>;
}

/** The databases of a test file, named `<prefix>_<time>_<n>`; `options` are the connection's. */
export function testDatabases(prefix: string, options?: MongoClientOptions): TestDatabases {
  const name = `${prefix}_${Date.now()}`;
  const databases: Db[] = [];
  let mongo: MongoClient | undefined;
  const connected = (): MongoClient => {
    if (!mongo) throw new Error("testDatabases: not connected");
    return mongo;
  };
  return {
    async connect() {
      mongo = await new MongoClient(process.env.MONGODB_URL ?? "", options).connect();
    },
    get mongo() {
      return connected();
    },
    create() {
      const db = connected().db(`${name}_${databases.length}`);
      databases.push(db);
      return db;
    },
    async close() {
      for (const db of databases) await db.dropDatabase();
      await mongo?.close();
    },
  };
}

/** The Mongo repositories a builds service is opened with. */
export type BuildsRepositories = Pick<BuildsDeps, "repo" | "logs" | "uploads" | "slots">;

/**
 * Replacements of methods of a service's build or upload repository, each given the Mongo repository to call on:
 * a process dying in the middle of a call, a count of calls.
 */
export interface RepositoryWraps {
  repo?: (repo: BuildRepository) => BuildRepository;
  uploads?: (uploads: PipelineUploadRepository) => PipelineUploadRepository;
}

/**
 * What a test sets of the service besides its repositories: a clock, settings, events (published nowhere if not);
 * and `wrap`, what its repositories do differently.
 */
export type BuildsServiceOverrides = Partial<Omit<BuildsDeps, keyof BuildsRepositories>> & { wrap?: RepositoryWraps };

/**
 * A builds service, the parts it is made of (a test runs their duties through them), its database, and the
 * repositories it was opened with (wrapped as `wrap` said), for a test's reads and writes behind its back.
 */
export interface OpenedBuildsService {
  client: BuildsClient;
  parts: BuildsParts;
  db: Db;
  repos: BuildsRepositories;
}

/**
 * Opens a builds service over `db` as one process of the service would be: its Mongo repositories, a silent
 * logger, and `overrides`. Two services opened over one database are two processes of it (locks of their own).
 */
export async function openBuildsService(db: Db, overrides: BuildsServiceOverrides = {}): Promise<OpenedBuildsService> {
  const { wrap = {}, ...settings } = overrides;
  const repo = await createMongoBuildRepository(db);
  const uploads = await createMongoPipelineUploadRepository(db);
  const repos: BuildsRepositories = {
    repo: wrap.repo ? wrap.repo(repo) : repo,
    logs: await createMongoJobLogRepository(db),
    uploads: wrap.uploads ? wrap.uploads(uploads) : uploads,
    slots: await createMongoConcurrencySlotRepository(db),
  };
  const parts = createBuildsParts({
    ...repos,
    events: { async publish() {} },
    logger: createLogger("test", "silent"),
    ...settings,
  });
  const client = createClient(
    BuildsService,
    createRouterTransport(({ service }) => service(BuildsService, createBuildsService(parts))),
  );
  return { client, parts, db, repos };
}
