import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";

// What a headless Gitea runs with (docs/operations.md, "A git forge: Gitea"): its app.ini, its secrets, and the
// state kept across restarts in its data folder. Pure, apart from the random secrets and the file checks named so.

/** The secrets of a Gitea's app.ini, generated once per data folder and kept in its state file. */
export interface GiteaSecrets {
  /** [security] SECRET_KEY: encrypts what Gitea stores encrypted (webhook secrets among them). */
  secretKey: string;
  /** [security] INTERNAL_TOKEN: its own processes' calls to its internal API. */
  internalToken: string;
  /** [oauth2] JWT_SECRET and [server] LFS_JWT_SECRET: 32 bytes, base64url without padding (as Gitea checks). */
  jwtSecret: string;
  lfsJwtSecret: string;
}

/** Secrets as `gitea generate secret` makes them (random bytes from `random`, crypto's by default). */
export function generateGiteaSecrets(random: (size: number) => Buffer = randomBytes): GiteaSecrets {
  return {
    secretKey: random(48).toString("base64url"),
    internalToken: random(48).toString("base64url"),
    jwtSecret: random(32).toString("base64url"),
    lfsJwtSecret: random(32).toString("base64url"),
  };
}

export interface GiteaIniOptions {
  /** Gitea's work path: its database, repositories, logs and sessions are under it. Absolute. */
  dataDir: string;
  port: number;
  /** Where templates/, options/ and public/ are (a binary built without bindata reads them there); else none. */
  staticRoot?: string | undefined;
  /** Gitea refuses to run as root unless told it may (I_AM_BEING_UNSAFE_RUNNING_AS_ROOT). */
  runningAsRoot: boolean;
  secrets: GiteaSecrets;
}

/** A value app.ini can hold as it is: go-ini would read a newline, a comment character or quotes otherwise. */
function iniValue(name: string, value: string): string {
  if (/[\r\n;#"`]/.test(value) || value !== value.trim()) {
    throw new Error(`${name} cannot be written into Gitea's app.ini: ${JSON.stringify(value)}`);
  }
  return value;
}

/**
 * The app.ini of a headless Gitea on 127.0.0.1: SQLite, installed (no setup page), no SSH, offline, no sign-up,
 * webhooks allowed to loopback addresses only (where the stack's gateway is), no Actions, packages, mail or update
 * checks. Its ROOT_URL is http://127.0.0.1:<port>/, which its clone URLs and webhook payloads carry.
 */
export function giteaAppIni(opts: GiteaIniOptions): string {
  const dir = iniValue("the data folder", opts.dataDir);
  if (!dir.startsWith("/")) throw new Error(`Gitea's data folder must be an absolute path, got ${dir}`);
  if (!Number.isInteger(opts.port) || opts.port < 1 || opts.port > 65_535) {
    throw new Error(`Gitea's port must be a TCP port, got ${opts.port}`);
  }
  const url = `http://127.0.0.1:${opts.port}/`;
  const s = opts.secrets;
  const lines = [
    "APP_NAME = Conveyor's Gitea",
    "RUN_MODE = prod",
    `WORK_PATH = ${dir}`,
    ...(opts.runningAsRoot ? ["I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true"] : []),
    "",
    "[server]",
    "PROTOCOL = http",
    "HTTP_ADDR = 127.0.0.1",
    `HTTP_PORT = ${opts.port}`,
    "DOMAIN = 127.0.0.1",
    `ROOT_URL = ${url}`,
    `APP_DATA_PATH = ${dir}/data`,
    ...(opts.staticRoot ? [`STATIC_ROOT_PATH = ${iniValue("the static root", opts.staticRoot)}`] : []),
    "DISABLE_SSH = true",
    "START_SSH_SERVER = false",
    "OFFLINE_MODE = true",
    "LFS_START_SERVER = false",
    `LFS_JWT_SECRET = ${iniValue("LFS_JWT_SECRET", s.lfsJwtSecret)}`,
    "",
    "[database]",
    "DB_TYPE = sqlite3",
    `PATH = ${dir}/data/gitea.db`,
    "SQLITE_JOURNAL_MODE = WAL",
    "",
    "[repository]",
    `ROOT = ${dir}/repositories`,
    "DEFAULT_BRANCH = main",
    "",
    "[security]",
    "INSTALL_LOCK = true",
    `SECRET_KEY = ${iniValue("SECRET_KEY", s.secretKey)}`,
    `INTERNAL_TOKEN = ${iniValue("INTERNAL_TOKEN", s.internalToken)}`,
    "",
    "[oauth2]",
    `JWT_SECRET = ${iniValue("JWT_SECRET", s.jwtSecret)}`,
    "",
    "[service]",
    "DISABLE_REGISTRATION = true",
    "REQUIRE_SIGNIN_VIEW = false",
    "",
    "[webhook]",
    // The stack's gateway is on 127.0.0.1; nothing else may be called (docs/webhooks.md).
    "ALLOWED_HOST_LIST = loopback",
    "DELIVER_TIMEOUT = 10",
    // The deliveries a hook's page shows (gitea-api.ts reads them): the latest 50.
    "PAGING_NUM = 50",
    "",
    "[log]",
    "MODE = console",
    "LEVEL = Info",
    `ROOT_PATH = ${dir}/log`,
    "",
    "[session]",
    "PROVIDER = file",
    "",
    "[actions]",
    "ENABLED = false",
    "",
    "[packages]",
    "ENABLED = false",
    "",
    "[mailer]",
    "ENABLED = false",
    "",
    "[cron.update_checker]",
    "ENABLED = false",
    "",
  ];
  return lines.join("\n");
}

/** Where a Gitea data folder keeps its app.ini (Gitea's own default place under its work path). */
export function giteaConfigFile(dataDir: string): string {
  return join(dataDir, "custom", "conf", "app.ini");
}

/** The static root for a binary: its own folder when templates/, options/ and public/ are there, else none. */
export function giteaStaticRoot(binary: string, exists: (path: string) => boolean = existsSync): string | undefined {
  const dir = dirname(binary);
  return ["templates", "options", "public"].every((d) => exists(join(dir, d))) ? dir : undefined;
}

/** The admin user a Gitea is started with. */
export interface GiteaAdmin {
  name: string;
  email: string;
  password: string;
}

/** What a data folder keeps across restarts (conveyor-gitea.json): the secrets, the admin and its API token. */
export interface GiteaState {
  secrets: GiteaSecrets;
  admin: GiteaAdmin;
  /** The admin's access token (every scope); made once the admin exists. */
  token?: string;
}

/** The state file of a data folder. */
export function giteaStateFile(dataDir: string): string {
  return join(dataDir, "conveyor-gitea.json");
}

/** A new state: fresh secrets, the admin `conveyor` (Gitea reserves `admin`) with a random password. */
export function newGiteaState(random: (size: number) => Buffer = randomBytes): GiteaState {
  return {
    secrets: generateGiteaSecrets(random),
    admin: { name: "conveyor", email: "conveyor@example.com", password: random(18).toString("base64url") },
  };
}

/** Reads a state file's text; throws naming the file when it is not a state this module wrote. */
export function parseGiteaState(text: string, file: string): GiteaState {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${file} is not JSON: remove it (and the Gitea data beside it) to start afresh`);
  }
  const state = (typeof parsed === "object" && parsed !== null ? parsed : {}) as Partial<GiteaState>;
  const s = state.secrets;
  const a = state.admin;
  const strings = (o: object | undefined, keys: string[]) =>
    o !== undefined && o !== null && keys.every((k) => typeof (o as Record<string, unknown>)[k] === "string");
  if (
    !strings(s, ["secretKey", "internalToken", "jwtSecret", "lfsJwtSecret"]) ||
    !strings(a, ["name", "email", "password"]) ||
    (state.token !== undefined && typeof state.token !== "string")
  ) {
    throw new Error(`${file} lacks Gitea's secrets or admin: remove it (and the Gitea data beside it) to start afresh`);
  }
  return state as GiteaState;
}
