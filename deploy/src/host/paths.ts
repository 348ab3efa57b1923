import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";

/** Environment variables, normally process.env. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Returns the value of an environment variable, treating an empty or blank value as unset. */
export function envValue(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

/** Finds the monorepo root (the package.json named "conveyor") at or above the given directory. */
export function findRepoRoot(start: string): string {
  let dir = resolve(start);
  for (;;) {
    const pkg = join(dir, "package.json");
    if (existsSync(pkg)) {
      try {
        const parsed = JSON.parse(readFileSync(pkg, "utf8")) as { name?: unknown; workspaces?: unknown };
        if (parsed.name === "conveyor" && Array.isArray(parsed.workspaces)) return dir;
      } catch {
        // An unreadable package.json is not the root; keep walking up.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`Cannot find the conveyor repository root above ${start}`);
    dir = parent;
  }
}

/** The directory that holds built tools: $CONVEYOR_CACHE_DIR, else ~/.cache/conveyor. */
export function cacheDir(env: Env): string {
  return resolve(envValue(env, "CONVEYOR_CACHE_DIR") ?? join(homedir(), ".cache", "conveyor"));
}

/** The data directory of `npm start`: $CONVEYOR_DATA_DIR, else <repo>/.data. */
export function defaultDataDir(repoRoot: string, env: Env): string {
  return resolve(repoRoot, envValue(env, "CONVEYOR_DATA_DIR") ?? ".data");
}

/** The files and folders of a data directory. */
export function dataPaths(dataDir: string) {
  return {
    root: dataDir,
    mongo: join(dataDir, "mongo"),
    nats: join(dataDir, "nats"),
    s3: join(dataDir, "s3"),
    logs: join(dataDir, "logs"),
    stackFile: join(dataDir, "stack.json"),
    credentialsFile: join(dataDir, "credentials.json"),
    /** The key source-provider credentials are sealed with (stack/credentials-key.ts). */
    credentialsKeyFile: join(dataDir, "credentials-encryption.key"),
  };
}

export type DataPaths = ReturnType<typeof dataPaths>;
