import { ConfigError, createEnvReader } from "./config.js";
import { readBackendConfig } from "./service-config.js";

describe("createEnvReader", () => {
  const r = createEnvReader({ PORT: "8080", BAD: "eighty", ON: "yes", URL: "http://x:1/", EMPTY: "  " });

  it("reads typed values with fallbacks", () => {
    expect(r.int("PORT", 1)).toBe(8080);
    expect(r.int("MISSING", 7)).toBe(7);
    expect(r.bool("ON", false)).toBe(true);
    expect(r.url("URL", "http://y")).toBe("http://x:1");
    expect(r.string("EMPTY", "fallback")).toBe("fallback");
  });

  it("fails fast naming the variable", () => {
    expect(() => r.int("BAD", 1)).toThrow(new ConfigError('BAD must be an integer, got "eighty"'));
    expect(() => r.string("NOPE")).toThrow(/Missing required environment variable NOPE/);
    expect(() => r.int("PORT", 1, { max: 100 })).toThrow(/PORT must be <= 100/);
  });
});

describe("readBackendConfig", () => {
  it("uses the service's default ports and database", () => {
    const config = readBackendConfig("identity", {});
    expect(config).toMatchObject({ port: 7101, healthPort: 7201, mongodbDatabase: "conveyor_identity" });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("lets the environment choose ports, and port 0 means any free port", () => {
    expect(readBackendConfig("builds", { PORT: "9000" }).healthPort).toBe(9100);
    expect(readBackendConfig("builds", { PORT: "0" }).healthPort).toBe(0);
  });

  it("rejects an unknown log level", () => {
    expect(() => readBackendConfig("agents", { LOG_LEVEL: "loud" })).toThrow(/LOG_LEVEL must be one of/);
  });

  it("ends connections after two minutes unless MAX_CONNECTION_AGE_S says otherwise (0: never)", () => {
    expect(readBackendConfig("builds", {}).maxConnectionAgeMs).toBe(120_000);
    expect(readBackendConfig("builds", { MAX_CONNECTION_AGE_S: "0" }).maxConnectionAgeMs).toBe(0);
    expect(() => readBackendConfig("builds", { MAX_CONNECTION_AGE_S: "-1" })).toThrow(/MAX_CONNECTION_AGE_S/);
  });
});
