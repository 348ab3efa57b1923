import { accessSync, constants, existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { type Env, envValue } from "./paths.js";

/** A server program the launcher can build with Go into its cache. */
export interface ToolSpec {
  /** Name of the cache folder and of the progress messages, for example "nats-server". */
  readonly name: string;
  readonly version: string;
  /** The file name of the binary inside its cache folder. */
  readonly binary: string;
  /** The environment variable that names a binary the user already has. */
  readonly envVar: string;
  /** How long a first build roughly takes, for the progress message. */
  readonly buildTime: string;
  /**
   * `go install` of a module path at a version, or FerretDB's special build (see go-build.ts): the module's source
   * with our patches (files in deploy/ferretdb/) applied.
   */
  readonly build: { kind: "go-install"; pkg: string } | { kind: "ferretdb"; module: string; patches: string[] };
}

export const NATS_SERVER: ToolSpec = {
  name: "nats-server",
  version: "v2.14.5",
  binary: "nats-server",
  envVar: "NATS_SERVER_BIN",
  buildTime: "~1 min",
  build: { kind: "go-install", pkg: "github.com/nats-io/nats-server/v2@v2.14.5" },
};

/**
 * FerretDB v1.24.2 with our patches in deploy/ferretdb: index-pushdown.patch lets SQLite use the indexes (upstream
 * never does, so every query read the whole collection); atomic-updates.patch makes conditional updates atomic
 * (upstream lets concurrent read-modify-writes of one document both win). The "-conveyor.N" suffix names the patch
 * level: raise it whenever a patch changes, so that machines rebuild their cached binary.
 */
export const FERRETDB: ToolSpec = {
  name: "ferretdb",
  version: "v1.24.2-conveyor.3",
  binary: "ferretdb",
  envVar: "FERRETDB_BIN",
  buildTime: "~1 min",
  build: {
    kind: "ferretdb",
    module: "github.com/FerretDB/FerretDB@v1.24.2",
    patches: ["index-pushdown.patch", "atomic-updates.patch"],
  },
};

export const VERSITYGW: ToolSpec = {
  name: "versitygw",
  version: "v1.7.0",
  binary: "versitygw",
  envVar: "VERSITYGW_BIN",
  buildTime: "~2 min",
  build: { kind: "go-install", pkg: "github.com/versity/versitygw/cmd/versitygw@v1.7.0" },
};

/** Where a tool's binary lives in the cache: <cache>/bin/<name>-<version>/<binary>. */
export function cachedToolPath(cache: string, tool: ToolSpec): string {
  return join(cache, "bin", `${tool.name}-${tool.version}`, tool.binary);
}

/** What the launcher can see of the machine; passed in so that the choices below are pure. */
export interface MachineProbe {
  /** The absolute path of an executable on PATH, or undefined. */
  which(command: string): string | undefined;
  /** Whether a file exists. */
  exists(path: string): boolean;
}

/** A binary to run: given by an env var, found on PATH, cached, or to be built into the cache first. */
export interface BinaryChoice {
  readonly tool: string;
  readonly path: string;
  readonly source: "env" | "path" | "cache" | "build";
  /** The spec to build from when source is "build". */
  readonly spec?: ToolSpec;
}

function chooseTool(tool: ToolSpec, env: Env, cache: string, probe: MachineProbe): BinaryChoice {
  const fromEnv = envValue(env, tool.envVar);
  if (fromEnv !== undefined) return { tool: tool.name, path: fromEnv, source: "env" };
  const cached = cachedToolPath(cache, tool);
  return { tool: tool.name, path: cached, source: probe.exists(cached) ? "cache" : "build", spec: tool };
}

export type MongoPlan =
  | { kind: "external"; url: string }
  | { kind: "mongod"; binary: BinaryChoice }
  | { kind: "ferretdb"; binary: BinaryChoice };

export type NatsPlan = { kind: "external"; url: string } | { kind: "nats-server"; binary: BinaryChoice };

export type S3Plan =
  | { kind: "external"; endpoint: string }
  | { kind: "minio"; binary: BinaryChoice }
  | { kind: "versitygw"; binary: BinaryChoice };

/**
 * The MongoDB-wire server: MONGODB_URL (an existing server) wins, then FERRETDB_BIN, then MONGOD_BIN or a `mongod`
 * on PATH, then FerretDB from the cache (built on first use).
 */
export function planMongo(env: Env, cache: string, probe: MachineProbe): MongoPlan {
  const url = envValue(env, "MONGODB_URL");
  if (url !== undefined) return { kind: "external", url };
  if (envValue(env, FERRETDB.envVar) !== undefined) {
    return { kind: "ferretdb", binary: chooseTool(FERRETDB, env, cache, probe) };
  }
  const mongodEnv = envValue(env, "MONGOD_BIN");
  if (mongodEnv !== undefined) return { kind: "mongod", binary: { tool: "mongod", path: mongodEnv, source: "env" } };
  const mongod = probe.which("mongod");
  if (mongod !== undefined) return { kind: "mongod", binary: { tool: "mongod", path: mongod, source: "path" } };
  return { kind: "ferretdb", binary: chooseTool(FERRETDB, env, cache, probe) };
}

/** NATS: NATS_URL (an existing server) wins, then NATS_SERVER_BIN, then nats-server v2.14.5 from the cache. */
export function planNats(env: Env, cache: string, probe: MachineProbe): NatsPlan {
  const url = envValue(env, "NATS_URL");
  if (url !== undefined) return { kind: "external", url };
  return { kind: "nats-server", binary: chooseTool(NATS_SERVER, env, cache, probe) };
}

/** S3: S3_ENDPOINT (an existing server) wins, then MINIO_BIN, then VERSITYGW_BIN or versitygw from the cache. */
export function planS3(env: Env, cache: string, probe: MachineProbe): S3Plan {
  const endpoint = envValue(env, "S3_ENDPOINT");
  if (endpoint !== undefined) return { kind: "external", endpoint };
  const minio = envValue(env, "MINIO_BIN");
  if (minio !== undefined) return { kind: "minio", binary: { tool: "minio", path: minio, source: "env" } };
  return { kind: "versitygw", binary: chooseTool(VERSITYGW, env, cache, probe) };
}

/** The real machine: PATH lookups and file checks. */
export function createMachineProbe(env: Env): MachineProbe {
  return {
    which(command) {
      for (const dir of (env.PATH ?? "").split(delimiter)) {
        if (dir === "") continue;
        const candidate = join(dir, command);
        try {
          accessSync(candidate, constants.X_OK);
          return candidate;
        } catch {
          // Not in this directory.
        }
      }
      return undefined;
    },
    exists: (path) => existsSync(path),
  };
}
