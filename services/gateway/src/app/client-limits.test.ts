import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { Readable } from "node:stream";
import { Role } from "@conveyor/proto/identity";
import type { FastifyInstance } from "fastify";
import Fastify from "fastify";
import { buildTestApp, type FakeWorld, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";
import { DEFAULT_CLIENT_LIMITS, dropStalledReader, registerClientLimits } from "./client-limits.js";

const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const world = (): FakeWorld => ({
  orgs: [acme],
  users: [ann],
  tokens: new Map([["full", makePrincipal(ann, ["read_organizations", "write_pipelines"], [[acme, Role.ADMIN]])]]),
  revoked: [],
});

/** Sends raw bytes (optionally more later) and resolves with everything the server sent until it closed. */
function rawExchange(port: number, first: string, opts: { later?: string; laterMs?: number } = {}) {
  return new Promise<{ text: string; ms: number }>((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, "127.0.0.1");
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk.toString();
    });
    socket.on("error", reject);
    socket.on("close", () => resolve({ text, ms: Date.now() - started }));
    socket.write(first);
    if (opts.later !== undefined) {
      setTimeout(() => {
        if (!socket.destroyed) socket.write(opts.later ?? "");
      }, opts.laterMs ?? 0).unref();
    }
  });
}

describe("client limits", () => {
  let app: FastifyInstance;
  let port: number;
  beforeAll(async () => {
    app = (
      await buildTestApp(
        world(),
        {},
        {},
        {},
        {
          headersTimeoutMs: 300,
          bodyTimeoutMs: 400,
          readIdleTimeoutMs: 60_000,
          maxHeaderBytes: 4096,
          maxUrlBytes: 1024,
        },
      )
    ).app;
    await app.listen({ host: "127.0.0.1", port: 0 });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(() => app.close());

  it("closes a connection whose headers do not arrive in time (slowloris) with 408", async () => {
    const { text, ms } = await rawExchange(port, "GET /v2/organizations/acme HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    expect(text).toMatch(/^HTTP\/1\.1 408/);
    expect(ms).toBeLessThan(3_000);
  });

  it("closes a request whose body does not arrive in time with 408 and a JSON message; the body sent late is not used", async () => {
    const head =
      "POST /v2/organizations/acme/pipelines HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer full\r\n" +
      "Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{";
    const { text, ms } = await rawExchange(port, head, { later: `"name":"x"}${" ".repeat(28)}`, laterMs: 2_000 });
    expect(text).toMatch(/^HTTP\/1\.1 408/);
    expect(text).toContain('"message":"Request Timeout');
    expect(ms).toBeLessThan(1_900);
  });

  it("answers a request whose body arrives in time", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v2/organizations/acme`, {
      headers: { authorization: "Bearer full" },
    });
    expect(res.status).toBe(200);
  });

  it("does not time out a request whose handler, not its client, is slow", async () => {
    // The body arrived at once: the timer stops when validation starts, whatever the handler then takes.
    const { text } = await rawExchange(
      port,
      "GET /v2/organizations/acme HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer full\r\nConnection: close\r\n\r\n",
    );
    expect(text).toMatch(/^HTTP\/1\.1 200/);
  });

  it("refuses headers larger than the limit with 431 and a URL longer than the limit with 414", async () => {
    const big = await fetch(`http://127.0.0.1:${port}/v2/organizations/acme`, {
      headers: { authorization: "Bearer full", "x-padding": "p".repeat(5000) },
    });
    expect(big.status).toBe(431);
    const long = await fetch(`http://127.0.0.1:${port}/v2/organizations/acme/pipelines?q=${"a".repeat(2000)}`, {
      headers: { authorization: "Bearer full" },
    });
    expect(long.status).toBe(414);
    expect(await long.json()).toEqual({ message: "URI Too Long: the URL must be at most 1024 bytes" });
  });

  it("answers the router's own errors in the API's shape, without echoing the path", async () => {
    const segment = await fetch(`http://127.0.0.1:${port}/v2/organizations/${"a".repeat(101)}`, {
      headers: { authorization: "Bearer full", "x-request-id": "seg-1" },
    });
    expect(segment.status).toBe(414);
    expect(segment.headers.get("x-request-id")).toBe("seg-1");
    expect(await segment.json()).toEqual({ message: "URI Too Long: a path segment must be at most 100 characters" });
    const badEncoding = await fetch(`http://127.0.0.1:${port}/v2/organizations/%zz`, {
      headers: { authorization: "Bearer full" },
    });
    expect(badEncoding.status).toBe(400);
    expect(await badEncoding.json()).toEqual({
      message: "Bad Request: the URL is not valid (check its percent-encoding)",
    });
  });
});

describe("dropStalledReader", () => {
  let server: Server;
  let port: number;
  const closed: Array<{ dropped: boolean; sent: number }> = [];

  beforeAll(async () => {
    // Endless 64 KiB pieces, as fast as the client takes them.
    server = createServer((_req, res) => {
      let dropped = false;
      let sent = 0;
      dropStalledReader(res, 1_000, () => {
        dropped = true;
      });
      res.once("close", () => closed.push({ dropped, sent }));
      const piece = Buffer.alloc(64 * 1024, "x");
      Readable.from(
        (function* () {
          for (;;) {
            sent += piece.length;
            yield piece;
          }
        })(),
      ).pipe(res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  /** Requests the endless answer; reads `bytesPerTick` every `tickMs` (0: never), for `forMs`. */
  function reader(bytesPerTick: number, tickMs: number, forMs: number) {
    return new Promise<{ closedByServer: boolean; read: number }>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      let read = 0;
      socket.pause();
      socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      const ticker =
        bytesPerTick > 0
          ? setInterval(() => {
              let chunk = socket.read(bytesPerTick);
              if (chunk === null) chunk = socket.read();
              if (chunk) read += chunk.length;
            }, tickMs)
          : undefined;
      const end = setTimeout(() => {
        clearInterval(ticker);
        socket.destroy();
        resolve({ closedByServer: false, read });
      }, forMs);
      socket.once("close", () => {
        clearTimeout(end);
        clearInterval(ticker);
        resolve({ closedByServer: true, read });
      });
      socket.on("error", () => {});
    });
  }

  /** Resolves with the server's record of the next answer that closes (or null after `ms`). */
  function nextClose(ms: number) {
    const before = closed.length;
    return new Promise<{ dropped: boolean; sent: number; ms: number } | null>((resolve) => {
      const started = Date.now();
      const poll = setInterval(() => {
        const entry = closed[before];
        if (entry || Date.now() - started > ms) {
          clearInterval(poll);
          resolve(entry ? { ...entry, ms: Date.now() - started } : null);
        }
      }, 20);
    });
  }

  it("disconnects a client that reads nothing while the answer waits to send more", async () => {
    const closing = nextClose(5_000);
    const client = reader(0, 0, 6_000);
    const entry = await closing;
    expect(entry?.dropped).toBe(true);
    // Dropped once its buffers were full and a second passed without a byte read.
    expect(entry?.ms).toBeLessThan(3_000);
    await client;
  });

  it("keeps a slow client that goes on reading, however long the answer takes", async () => {
    // 256 KiB every 50 ms for 4 s: four times the idle timeout (TCP opens its window in steps, so a reader this
    // slow still lets the server write nothing for a few hundred milliseconds at a time).
    const closing = nextClose(8_000);
    const { closedByServer, read } = await reader(256 * 1024, 50, 4_000);
    expect(closedByServer).toBe(false);
    expect(read).toBeGreaterThan(4 * 1024 * 1024);
    // The client left after 4 s: the server saw it go, and had not dropped it.
    expect((await closing)?.dropped).toBe(false);
  });
});

describe("registerClientLimits on answers of every kind", () => {
  it("leaves empty (204), plain and streamed answers as their routes give them", async () => {
    const app = Fastify();
    registerClientLimits(app, { ...DEFAULT_CLIENT_LIMITS, readIdleTimeoutMs: 1_000 });
    app.put("/empty", async (_req, reply) => reply.code(204).send());
    app.get("/plain", async () => ({ ok: true }));
    app.get("/streamed", async (_req, reply) => reply.type("text/plain").send(Readable.from(["a", "b"])));
    try {
      expect((await app.inject({ method: "PUT", url: "/empty" })).statusCode).toBe(204);
      const plain = await app.inject({ method: "GET", url: "/plain" });
      expect([plain.statusCode, plain.json()]).toEqual([200, { ok: true }]);
      const streamed = await app.inject({ method: "GET", url: "/streamed" });
      expect([streamed.statusCode, streamed.body]).toEqual([200, "ab"]);
    } finally {
      await app.close();
    }
  });
});
