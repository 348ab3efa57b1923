import {
  type GiteaSecrets,
  generateGiteaSecrets,
  giteaAppIni,
  giteaConfigFile,
  giteaStateFile,
  giteaStaticRoot,
  newGiteaState,
  parseGiteaState,
} from "./gitea-config.js";

const secrets: GiteaSecrets = {
  secretKey: "sk",
  internalToken: "it",
  jwtSecret: "jwt",
  lfsJwtSecret: "lfs",
};

/** An app.ini's sections as { section: { key: value } } ("" for the keys before the first section). */
function parseIni(text: string): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = { "": {} };
  let section = "";
  for (const line of text.split("\n")) {
    const header = /^\[(.+)\]$/.exec(line);
    if (header?.[1]) {
      section = header[1];
      out[section] = {};
    } else if (line.includes(" = ")) {
      const [key, ...rest] = line.split(" = ");
      (out[section] as Record<string, string>)[key as string] = rest.join(" = ");
    }
  }
  return out;
}

describe("giteaAppIni", () => {
  const ini = parseIni(giteaAppIni({ dataDir: "/data/gitea", port: 3456, runningAsRoot: false, secrets }));

  it("is a headless Gitea on 127.0.0.1 at the port, installed, without SSH, offline", () => {
    expect(ini.server).toMatchObject({
      HTTP_ADDR: "127.0.0.1",
      HTTP_PORT: "3456",
      ROOT_URL: "http://127.0.0.1:3456/",
      DISABLE_SSH: "true",
      START_SSH_SERVER: "false",
      OFFLINE_MODE: "true",
    });
    expect(ini.security).toMatchObject({ INSTALL_LOCK: "true", SECRET_KEY: "sk", INTERNAL_TOKEN: "it" });
    expect(ini.oauth2?.JWT_SECRET).toBe("jwt");
    expect(ini.server?.LFS_JWT_SECRET).toBe("lfs");
  });

  it("keeps everything in the data folder, the database SQLite", () => {
    expect(ini[""]?.WORK_PATH).toBe("/data/gitea");
    expect(ini.database).toMatchObject({ DB_TYPE: "sqlite3", PATH: "/data/gitea/data/gitea.db" });
    expect(ini.repository?.ROOT).toBe("/data/gitea/repositories");
    expect(ini.server?.APP_DATA_PATH).toBe("/data/gitea/data");
    expect(ini.log?.ROOT_PATH).toBe("/data/gitea/log");
  });

  it("lets webhooks call loopback addresses only, and nobody sign up", () => {
    expect(ini.webhook?.ALLOWED_HOST_LIST).toBe("loopback");
    expect(ini.service?.DISABLE_REGISTRATION).toBe("true");
  });

  it("turns off what a test forge does not need", () => {
    for (const section of ["actions", "packages", "mailer", "cron.update_checker"]) {
      expect(ini[section]?.ENABLED).toBe("false");
    }
  });

  it("says it may run as root only when it runs as root", () => {
    expect(ini[""]?.I_AM_BEING_UNSAFE_RUNNING_AS_ROOT).toBeUndefined();
    const asRoot = parseIni(giteaAppIni({ dataDir: "/d", port: 1, runningAsRoot: true, secrets }));
    expect(asRoot[""]?.I_AM_BEING_UNSAFE_RUNNING_AS_ROOT).toBe("true");
  });

  it("points STATIC_ROOT_PATH at the folder of templates/, options/ and public/ when there is one", () => {
    expect(ini.server?.STATIC_ROOT_PATH).toBeUndefined();
    const withFiles = giteaAppIni({ dataDir: "/d", port: 1, runningAsRoot: false, secrets, staticRoot: "/cache/g" });
    expect(parseIni(withFiles).server?.STATIC_ROOT_PATH).toBe("/cache/g");
  });

  it.each([
    ["a relative data folder", { dataDir: "data" }, /absolute/],
    ["a comment character in a path", { dataDir: "/data;x" }, /cannot be written/],
    ["a newline in a secret", { secrets: { ...secrets, secretKey: "a\nb" } }, /SECRET_KEY/],
    ["port 0", { port: 0 }, /TCP port/],
    ["port 65536", { port: 65_536 }, /TCP port/],
  ])("refuses %s", (_what, change, message) => {
    expect(() => giteaAppIni({ dataDir: "/d", port: 3000, runningAsRoot: false, secrets, ...change })).toThrow(message);
  });
});

describe("secrets and state", () => {
  it("makes secrets Gitea reads: JWT secrets of 32 bytes in base64url without padding", () => {
    const s = generateGiteaSecrets();
    for (const jwt of [s.jwtSecret, s.lfsJwtSecret]) {
      expect(jwt).toMatch(/^[\w-]{43}$/);
      expect(Buffer.from(jwt, "base64url")).toHaveLength(32);
    }
    expect(s.secretKey.length).toBeGreaterThanOrEqual(64);
    expect(s.internalToken.length).toBeGreaterThanOrEqual(64);
    expect(generateGiteaSecrets().secretKey).not.toBe(s.secretKey);
  });

  it("starts a state with an admin Gitea accepts (not the reserved `admin`) and no token yet", () => {
    const state = newGiteaState();
    expect(state.admin.name).toBe("conveyor");
    expect(state.admin.email).toMatch(/^[^@]+@[^@]+\.[a-z]+$/);
    expect(state.admin.password.length).toBeGreaterThanOrEqual(20);
    expect(state.token).toBeUndefined();
  });

  it("reads back a state it wrote, and refuses anything else naming the file", () => {
    const state = { ...newGiteaState(), token: "t" };
    expect(parseGiteaState(JSON.stringify(state), "/x.json")).toEqual(state);
    expect(() => parseGiteaState("{", "/x.json")).toThrow("/x.json is not JSON");
    expect(() => parseGiteaState('{"admin": {}}', "/x.json")).toThrow(/x\.json lacks/);
    expect(() => parseGiteaState(JSON.stringify({ ...state, token: 1 }), "/x.json")).toThrow(/lacks/);
    expect(() => parseGiteaState("null", "/x.json")).toThrow(/lacks/);
  });

  it("keeps app.ini and the state in the data folder", () => {
    expect(giteaConfigFile("/d")).toBe("/d/custom/conf/app.ini");
    expect(giteaStateFile("/d")).toBe("/d/conveyor-gitea.json");
  });
});

describe("giteaStaticRoot", () => {
  it("is the binary's folder only when all three folders are there", () => {
    const all = new Set(["/c/templates", "/c/options", "/c/public"]);
    expect(giteaStaticRoot("/c/gitea", (p) => all.has(p))).toBe("/c");
    expect(giteaStaticRoot("/c/gitea", (p) => p !== "/c/public" && all.has(p))).toBeUndefined();
  });
});
