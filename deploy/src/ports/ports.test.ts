import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { DEFAULT_PORTS } from "@conveyor/runtime";
import { allocateFreePorts, isPortFree, PORT_KEYS, portsFromEnv } from "./ports.js";

const RANGE = "/proc/sys/net/ipv4/ip_local_port_range";

describe("portsFromEnv", () => {
  it("uses the default ports, with health endpoints 100 above the backends", () => {
    const ports = portsFromEnv({});
    expect(ports).toMatchObject({ gateway: 8080, identity: 7101, mongodb: 27117, nats: 4322, s3: 9100 });
    expect(ports.health).toEqual({
      identity: 7201,
      pipelines: 7202,
      builds: 7203,
      artifacts: 7204,
      agents: 7205,
      notifications: 7206,
    });
    for (const key of PORT_KEYS) expect(ports[key]).toBe(DEFAULT_PORTS[key]);
  });

  it("lets <NAME>_PORT move one port, and its health port with it", () => {
    const ports = portsFromEnv({ GATEWAY_PORT: "9080", IDENTITY_PORT: "7301" });
    expect(ports.gateway).toBe(9080);
    expect(ports.identity).toBe(7301);
    expect(ports.health.identity).toBe(7401);
  });

  it("rejects a malformed port, naming the variable", () => {
    expect(() => portsFromEnv({ NATS_PORT: "42x" })).toThrow(/NATS_PORT must be a port number/);
    expect(() => portsFromEnv({ S3_PORT: "70000" })).toThrow(/S3_PORT/);
  });
});

describe("allocateFreePorts", () => {
  it("returns 16 distinct ports nothing listens on", async () => {
    const ports = await allocateFreePorts();
    const all = [...PORT_KEYS.map((k) => ports[k]), ...Object.values(ports.health)];
    expect(all).toHaveLength(16);
    expect(new Set(all).size).toBe(16);
    for (const port of all) expect(await isPortFree(port)).toBe(true);
  });

  it("takes them below the kernel's ephemeral range, where listen(0) elsewhere never lands", async () => {
    const range = existsSync(RANGE) ? Number(readFileSync(RANGE, "utf8").trim().split(/\s+/)[0]) : 32_768;
    const ports = await allocateFreePorts();
    for (const port of [...PORT_KEYS.map((k) => ports[k]), ...Object.values(ports.health)]) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(range);
    }
  });
});

describe("isPortFree", () => {
  let server: Server;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it("sees a port taken by a listener on all interfaces", async () => {
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    expect(await isPortFree(port)).toBe(false);
  });
});
