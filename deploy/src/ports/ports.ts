import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { BACKEND_SERVICES, type BackendService, DEFAULT_PORTS, HEALTH_PORT_OFFSET } from "@conveyor/runtime";
import { type Env, envValue } from "../host/paths.js";
import { reservePort } from "./port-reservations.js";

/** Every port of a stack: the seven processes, the backends' HTTP/1.1 health endpoints and the three servers. */
export interface StackPorts {
  gateway: number;
  identity: number;
  pipelines: number;
  builds: number;
  artifacts: number;
  agents: number;
  notifications: number;
  mongodb: number;
  nats: number;
  s3: number;
  health: Record<BackendService, number>;
  /** The gateway's TLS port (HTTP/2 and HTTP/1.1, for the agents' streaming pings): TLS_PORT, 8443 by default. */
  gatewayTls?: number;
}

/** The names of the port keys, in the order ports are allocated and checked. */
/** The gateway's TLS port of `npm start` (TLS_PORT overrides it). */
export const DEFAULT_TLS_PORT = 8443;

export const PORT_KEYS = [
  "gateway",
  ...BACKEND_SERVICES,
  "mongodb",
  "nats",
  "s3",
] as const satisfies readonly (keyof typeof DEFAULT_PORTS)[];
export type PortKey = (typeof PORT_KEYS)[number];

/** The environment variable that overrides one default port, for example GATEWAY_PORT. */
export function portVar(key: PortKey): string {
  return `${key.toUpperCase()}_PORT`;
}

/** The ports of `npm start`: DEFAULT_PORTS, each overridable by <NAME>_PORT; health ports are port + 100. */
export function portsFromEnv(env: Env): StackPorts {
  const ports = {} as Record<PortKey, number>;
  for (const key of PORT_KEYS) {
    const name = portVar(key);
    const raw = envValue(env, name);
    const value = raw === undefined ? DEFAULT_PORTS[key] : Number(raw);
    if (!Number.isInteger(value) || value < 1 || value > 65535 - HEALTH_PORT_OFFSET) {
      throw new Error(`${name} must be a port number between 1 and ${65535 - HEALTH_PORT_OFFSET}, got "${raw}"`);
    }
    ports[key] = value;
  }
  const health = {} as Record<BackendService, number>;
  for (const service of BACKEND_SERVICES) health[service] = ports[service] + HEALTH_PORT_OFFSET;
  const tls = Number(envValue(env, "TLS_PORT") ?? DEFAULT_TLS_PORT);
  if (!Number.isInteger(tls) || tls < 1 || tls > 65535)
    throw new Error(`TLS_PORT must be a port number (got ${envValue(env, "TLS_PORT")})`);
  return { ...ports, health, gatewayTls: tls };
}

/** Where free ports are looked for: below the kernel's ephemeral range (see getFreePort). */
const FREE_PORTS_FROM = 20_000;

/** The first port of the kernel's ephemeral range (Linux; 32768 where it cannot be read). */
function ephemeralFrom(): number {
  try {
    const first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 0 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

/** Asks the operating system for a port it is not using now (from its ephemeral range). */
function ephemeralPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("could not allocate a port"))));
    });
  });
}

/**
 * A free TCP port on 127.0.0.1, for a server that will listen on it a little later. It is chosen at random below
 * the kernel's ephemeral range: a port the kernel handed out (listen(0)) and was released is handed out again to the
 * next process that asks, and a test stack's servers start seconds after their ports are chosen, while other suites
 * start servers of their own (this was a CI failure: EADDRINUSE on a replica balancer's port). Falls back to the
 * ephemeral range when the system leaves no room below it. A port is also noted for this process (reservePort), so
 * no other process chooses it before its server binds it, nor while that server restarts.
 */
export async function getFreePort(): Promise<number> {
  const to = ephemeralFrom();
  if (to - FREE_PORTS_FROM >= 1_000) {
    for (let attempt = 0; attempt < 100; attempt++) {
      const port = FREE_PORTS_FROM + Math.floor(Math.random() * (to - FREE_PORTS_FROM));
      if ((await isPortFree(port)) && reservePort(port)) return port;
    }
  }
  for (;;) {
    const port = await ephemeralPort();
    if (reservePort(port)) return port;
  }
}

/** Allocates distinct free ports for a whole stack (for tests and benchmarks); getFreePort never repeats one. */
export async function allocateFreePorts(): Promise<StackPorts> {
  const ports = {} as Record<PortKey, number>;
  for (const key of PORT_KEYS) ports[key] = await getFreePort();
  const health = {} as Record<BackendService, number>;
  for (const service of BACKEND_SERVICES) health[service] = await getFreePort();
  return { ...ports, health, gatewayTls: await getFreePort() };
}

/** Whether nothing listens on 127.0.0.1:port (tried by listening on it). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => server.close(() => resolve(true)));
  });
}
