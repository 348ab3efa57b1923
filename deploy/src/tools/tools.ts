import { accessSync, constants, existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { type Env, envValue } from "../host/paths.js";

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
  /** The oldest Go that builds it, when newer than the launcher's general minimum (1.24). */
  readonly minGo?: string;
  /**
   * `go install` of a module path at a version; FerretDB's special build (see go-build.ts): the module's source
   * with our patches (files in deploy/ferretdb/) applied; or `go build` of a package inside a build module of ours
   * (a folder of deploy/, copied and built there, so that its go.mod and replace directives apply).
   */
  readonly build:
    | { kind: "go-install"; pkg: string }
    | { kind: "ferretdb"; module: string; patches: string[]; dependencies?: PatchedDependency[] }
    | GoModuleBuild;
}

/** `go build` of a package inside one of our build modules (deploy/<dir>), with what else the tool needs. */
export interface GoModuleBuild {
  kind: "go-module";
  /** The build module's folder under deploy/. */
  dir: string;
  /** The package to build (its main package). */
  pkg: string;
  /** Build tags (`-tags`). */
  tags?: readonly string[];
  /** `-ldflags` settings, for example `-X "main.Version=1.26.0"`; joined with spaces. */
  ldflags?: readonly string[];
  /**
   * Environment of the build, over the caller's (CGO_ENABLED, CGO_CFLAGS). With CGO_ENABLED=1 the build needs a C
   * compiler, which checkGo looks for.
   */
  env?: Readonly<Record<string, string>>;
  /**
   * Folders of a module's source (`path@version`, downloaded into the module cache) that the binary reads at run
   * time, copied next to it in its cache folder.
   */
  files?: { module: string; paths: readonly string[] };
}

/**
 * A module FerretDB depends on, built from a patched copy: the module at the version FerretDB's go.sum pins is
 * copied into the source folder as `dir`, the patches (files in deploy/ferretdb/, paths relative to the module's root)
 * are applied, and a replace directive points FerretDB's go.mod at the copy.
 */
export interface PatchedDependency {
  module: string;
  dir: string;
  patches: string[];
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
 * FerretDB v1.24.2 with our patches in deploy/ferretdb: index-pushdown.patch lets SQLite use the indexes for
 * filters (upstream never does, so every query read the whole collection), with conditions that keep every document
 * that can match; sort-pushdown.patch lets SQLite sort (and stream a page from an index) when it orders exactly as
 * FerretDB does, and leaves the sort to FerretDB otherwise; atomic-updates.patch makes conditional updates atomic
 * (upstream lets concurrent read-modify-writes of one document both win); update-statements.patch closes each
 * statement's query of an update command before the next (upstream held them all, so a command of over 100
 * statements waited forever for a SQLite connection); resource-tracking.patch keeps upstream's leak tracking (a stack
 * trace and a finalizer for every query's iterators) to debug builds; count-pushdown.patch answers a count whose filter
 * SQLite evaluates exactly (string equalities and $in on fields that only held strings) with SELECT count(*), from an
 * index, where upstream decodes every document it counts; update-batches.patch writes the documents one update
 * statement changes together, up to 100 in one SQLite transaction (upstream used a transaction, so a commit and a WAL
 * fsync, per document), with upstream's outcome when one is refused; kinds-triggers.patch lets the field-kinds triggers
 * of index-pushdown.patch skip what cannot add to their record (an update that leaves the top-level schema as it was,
 * a document without a double for the extreme-double ones). Two dependencies are patched too:
 * libc-memcmp.patch gives modernc.org/libc (the C library the SQLite driver is transpiled against) a vectorized memcmp
 * instead of a byte-at-a-time loop (SQLite's JSON functions compare a whole document with it, once per indexed field);
 * sqlite-stmt-cache.patch lets each connection of modernc.org/sqlite (the driver) keep the last 16 statements it
 * executed, compiled, instead of compiling every INSERT and UPDATE again (with each of a collection's indexes and
 * triggers) on every exec.
 * The "-conveyor.N" suffix names the patch level: raise it whenever a patch changes, so that machines rebuild their
 * cached binary.
 */
export const FERRETDB: ToolSpec = {
  name: "ferretdb",
  version: "v1.24.2-conveyor.10",
  binary: "ferretdb",
  envVar: "FERRETDB_BIN",
  buildTime: "~1 min",
  build: {
    kind: "ferretdb",
    module: "github.com/FerretDB/FerretDB@v1.24.2",
    patches: [
      "index-pushdown.patch",
      "sort-pushdown.patch",
      "atomic-updates.patch",
      "update-statements.patch",
      "resource-tracking.patch",
      "count-pushdown.patch",
      "update-batches.patch",
      "kinds-triggers.patch",
    ],
    dependencies: [
      { module: "modernc.org/libc@v1.55.3", dir: "conveyor-libc", patches: ["libc-memcmp.patch"] },
      { module: "modernc.org/sqlite@v1.32.0", dir: "conveyor-sqlite", patches: ["sqlite-stmt-cache.patch"] },
    ],
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

/**
 * MinIO, the design's named store: its community edition is source only and the module proxy refuses its RELEASE
 * tags, so it is this pseudo-version (its @latest, verified to build and serve). A cold build takes about ten
 * minutes; later runs reuse the cached binary. Chosen by CONVEYOR_S3=minio (or MINIO_BIN), and by the artifact
 * suites, which run beside the stack's versitygw.
 */
export const MINIO: ToolSpec = {
  name: "minio",
  version: "v0.0.0-20260212201848-7aac2a2c5b7c",
  binary: "minio",
  envVar: "MINIO_BIN",
  buildTime: "~10 min",
  build: { kind: "go-install", pkg: "github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c" },
};

/**
 * The unmodified buildkite-agent v3.137.0, built from our build module deploy/buildkite-agent: every agent release
 * imports drjosh.dev/zzglob, which the Go module proxy refuses, so the module replaces it with our adapter over
 * doublestar (deploy/buildkite-agent/zzglob). The "-conveyor.N" suffix names the level of that build module, like
 * FerretDB's patch level: the adapter is compiled into the binary, so raise N whenever go.mod, go.sum or the adapter
 * changes, and machines rebuild their cached agent. The binary must be called buildkite-agent: jobs run
 * `buildkite-agent meta-data …` and the like by that name. Go 1.26.5 or newer: the agent's go.mod requires it.
 */
export const BUILDKITE_AGENT: ToolSpec = {
  name: "buildkite-agent",
  version: "v3.137.0-conveyor.1",
  binary: "buildkite-agent",
  envVar: "BUILDKITE_AGENT_BIN",
  buildTime: "~4 min",
  minGo: "1.26.5",
  build: { kind: "go-module", dir: "buildkite-agent", pkg: "github.com/buildkite/agent/v3" },
};

/**
 * Gitea v1.26.0, a real git forge for the end-to-end test of webhooks (test/webhooks/gitea.e2e.test.ts) and for
 * `CONVEYOR_FORGE=gitea npm start` (docs/webhooks.md, docs/operations.md). Built only when one of those asks for it.
 * `go install` refuses it (its go.mod has replace directives) and later versions are not served by the module proxy,
 * so it is built from our build module deploy/gitea, which requires it and repeats its seven replace lines. As
 * Gitea's Makefile builds it: CGO with the sqlite tags, SQLite's variable limit raised, the version in the binary.
 * Without the `bindata` tag Gitea reads templates/, options/ and public/ from its static root: they are copied from
 * the module next to the binary (deploy/src/forge/gitea-config.ts points STATIC_ROOT_PATH there). The
 * "-conveyor.N" suffix names the level of the build module, as the agent's does. About 6 minutes cold on 2 cores.
 */
export const GITEA: ToolSpec = {
  name: "gitea",
  version: "v1.26.0-conveyor.1",
  binary: "gitea",
  envVar: "GITEA_BIN",
  buildTime: "~6 min",
  minGo: "1.26.2",
  build: {
    kind: "go-module",
    dir: "gitea",
    pkg: "code.gitea.io/gitea",
    tags: ["sqlite", "sqlite_unlock_notify"],
    ldflags: ['-X "main.Version=1.26.0"', '-X "main.Tags=sqlite sqlite_unlock_notify"'],
    env: { CGO_ENABLED: "1", CGO_CFLAGS: "-O2 -g -DSQLITE_MAX_VARIABLE_NUMBER=32766" },
    files: { module: "code.gitea.io/gitea@v1.26.0", paths: ["templates", "options", "public"] },
  },
};

/**
 * Helm v4, for the offline checks of the chart deploy/helm/conveyor (helm lint, helm template); a cold build takes
 * about 4 minutes on 2 cores, and Helm 4 needs Go 1.26. Remote chart repositories are unreachable: the chart vendors
 * nothing. v4.2.4 is the newest v4.2.x the Go module proxy serves.
 */
export const HELM: ToolSpec = {
  name: "helm",
  version: "v4.2.4",
  binary: "helm",
  envVar: "HELM_BIN",
  buildTime: "~4 min",
  minGo: "1.26",
  build: { kind: "go-install", pkg: "helm.sh/helm/v4/cmd/helm@v4.2.4" },
};

/**
 * kubectl-validate validates rendered manifests against Kubernetes' own OpenAPI schemas, offline with its built-in
 * ones (up to 1.30; later versions are downloaded). v0.0.4 is the only version the Go module proxy serves; a cold
 * build takes about 10 minutes on 2 cores.
 */
export const KUBECTL_VALIDATE: ToolSpec = {
  name: "kubectl-validate",
  version: "v0.0.4",
  binary: "kubectl-validate",
  envVar: "KUBECTL_VALIDATE_BIN",
  buildTime: "~10 min",
  build: { kind: "go-install", pkg: "sigs.k8s.io/kubectl-validate@v0.0.4" },
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
  /** The spec to build from when source is "build" (also set when the env var of a spec names the binary). */
  readonly spec?: ToolSpec;
}

function chooseTool(tool: ToolSpec, env: Env, cache: string, probe: MachineProbe): BinaryChoice {
  const fromEnv = envValue(env, tool.envVar);
  if (fromEnv !== undefined) return { tool: tool.name, path: fromEnv, source: "env" };
  const cached = cachedToolPath(cache, tool);
  return { tool: tool.name, path: cached, source: probe.exists(cached) ? "cache" : "build", spec: tool };
}

/** A tool the launcher builds with Go when needed (helm, kubectl-validate): its env var, else the cache. */
export function planTool(tool: ToolSpec, env: Env, cache: string, probe: MachineProbe): BinaryChoice {
  return chooseTool(tool, env, cache, probe);
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

/**
 * S3: S3_ENDPOINT (an existing server) wins, then MINIO_BIN, then MinIO from the cache (built on first use) when
 * CONVEYOR_S3=minio, then VERSITYGW_BIN or versitygw from the cache.
 */
export function planS3(env: Env, cache: string, probe: MachineProbe): S3Plan {
  const endpoint = envValue(env, "S3_ENDPOINT");
  if (endpoint !== undefined) return { kind: "external", endpoint };
  const minio = envValue(env, "MINIO_BIN");
  if (minio !== undefined) return { kind: "minio", binary: { tool: "minio", path: minio, source: "env" } };
  if (envValue(env, "CONVEYOR_S3") === "minio") return { kind: "minio", binary: chooseTool(MINIO, env, cache, probe) };
  return { kind: "versitygw", binary: chooseTool(VERSITYGW, env, cache, probe) };
}

/** buildkite-agent: BUILDKITE_AGENT_BIN, then a `buildkite-agent` on PATH, then the cache (built on first use). */
export function planAgent(env: Env, cache: string, probe: MachineProbe): BinaryChoice {
  const fromEnv = envValue(env, BUILDKITE_AGENT.envVar);
  if (fromEnv !== undefined) return { tool: BUILDKITE_AGENT.name, path: fromEnv, source: "env", spec: BUILDKITE_AGENT };
  const onPath = probe.which(BUILDKITE_AGENT.binary);
  if (onPath !== undefined) return { tool: BUILDKITE_AGENT.name, path: onPath, source: "path" };
  return chooseTool(BUILDKITE_AGENT, env, cache, probe);
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
