import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Health } from "@conveyor/proto/health";
import { createLogger } from "../process/logger.js";
import { createServiceClient, GuardedHttp2SessionManager } from "./clients.js";
import { createHealthState } from "./health.js";
import { type RpcServer, startRpcServer } from "./rpc-server.js";

async function stats(server: RpcServer): Promise<{ rpcCalls: number; connectionsOpened: number }> {
  const res = await fetch(`http://127.0.0.1:${server.healthPort}/stats`);
  return (await res.json()) as { rpcCalls: number; connectionsOpened: number };
}

/** A server on free ports whose health service serves `services`, with the given maximum connection age. */
async function testServer(services: string[], maxConnectionAgeMs?: number): Promise<RpcServer> {
  const health = createHealthState(services);
  health.setServing(true);
  return startRpcServer({
    host: "127.0.0.1",
    port: 0,
    healthPort: 0,
    routes: () => {},
    health,
    logger: createLogger("test", "silent"),
    ...(maxConnectionAgeMs === undefined ? {} : { maxConnectionAgeMs }),
  });
}

describe("startRpcServer with a maximum connection age", () => {
  let server: RpcServer;

  beforeAll(async () => {
    server = await testServer(["ci.test.v1.TestService"], 100);
  });

  afterAll(() => server.close());

  it("retires connections under a steady stream of calls, and the client sends refused calls again: none fails, none runs twice", async () => {
    const client = createServiceClient(Health, server.url, { timeoutMs: 5_000 });
    const before = await stats(server);
    const failures: string[] = [];
    let done = 0;
    const until = Date.now() + 1_500;
    // On a loaded machine the calls go on past 1.5 s until more than 20 are done (for 15 s at most).
    const cap = Date.now() + 15_000;
    // Four callers at once, so that calls are in flight whenever a connection is retired.
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while ((Date.now() < until || done <= 20) && Date.now() < cap) {
          try {
            await client.check({ service: "" });
            done++;
          } catch (err) {
            failures.push(String(err));
          }
        }
      }),
    );
    const after = await stats(server);
    expect(failures).toEqual([]);
    expect(done).toBeGreaterThan(20);
    expect(after.rpcCalls - before.rpcCalls).toBe(done);
    // A connection lives 100–110 ms: the client opened several over 1.5 s (or more).
    expect(after.connectionsOpened - before.connectionsOpened).toBeGreaterThanOrEqual(5);
  });
});

describe("a GOAWAY on an idle client connection", () => {
  it("does not crash the client when a call starts just as it arrives (GuardedHttp2SessionManager)", async () => {
    const server = await testServer([], 100);
    const hooked = new WeakSet<object>();
    const later: Array<Promise<unknown>> = [];
    let client: ReturnType<typeof createClient<typeof Health>> | undefined;
    // A call started from the client's own "goaway" handler: exactly the window in which connect-node 2.1.2 drops
    // its error listener of the session it is destroying (without the guard, the process dies of that error).
    class Racing extends GuardedHttp2SessionManager {
      override async request(...args: Parameters<GuardedHttp2SessionManager["request"]>) {
        const stream = await super.request(...args);
        const session = stream.session;
        // Only the first connection: the call started on its GOAWAY opens the next one.
        if (session && !hooked.has(session) && later.length === 0) {
          hooked.add(session);
          session.once("goaway", () => {
            if (client) later.push(client.check({ service: "" }));
          });
        }
        return stream;
      }
    }
    client = createClient(
      Health,
      createConnectTransport({ baseUrl: server.url, httpVersion: "2", sessionManager: new Racing(server.url) }),
    );
    await client.check({ service: "" });
    // The connection, idle now, is retired at its age (100 ms) with a GOAWAY; the call started as it arrives goes to
    // a new connection and is answered, and the process lives.
    await new Promise((resolve) => setTimeout(resolve, 400));
    await server.close();
    expect(later).toHaveLength(1);
    expect(await later[0]?.then(() => "answered")).toBe("answered");
  });
});

describe("createServiceClient", () => {
  it("asks for answers uncompressed (connect-node's default client gets the same answer gzipped)", async () => {
    // 60 services listed make an answer of a few KB, over the 1 KB from which a server compresses what it may.
    const server = await testServer(Array.from({ length: 60 }, (_, i) => `ci.test.v1.Service${i}WithALongName`));
    try {
      const encodings: string[] = [];
      const seeEncoding: Interceptor = (next) => async (req) => {
        const res = await next(req);
        encodings.push(res.header.get("content-encoding") ?? "identity");
        return res;
      };
      const ours = createServiceClient(Health, server.url, { interceptors: [seeEncoding] });
      const plain = createClient(
        Health,
        createConnectTransport({ baseUrl: server.url, httpVersion: "2", interceptors: [seeEncoding] }),
      );
      const [a, b] = [await ours.list({}), await plain.list({})];
      expect(Object.keys(a.statuses)).toHaveLength(Object.keys(b.statuses).length);
      expect(Object.keys(a.statuses).length).toBeGreaterThanOrEqual(60);
      expect(encodings).toEqual(["identity", "gzip"]);
    } finally {
      await server.close();
    }
  });
});

describe("createServiceClient's streaming calls (an idle timeout, no deadline)", () => {
  const services = ["ci.test.v1.Streamed"];
  let server: RpcServer;
  const health = createHealthState(services);

  beforeAll(async () => {
    health.setServing(true);
    server = await startRpcServer({
      host: "127.0.0.1",
      port: 0,
      healthPort: 0,
      routes: () => {},
      health,
      logger: createLogger("test", "silent"),
    });
  });

  afterAll(() => server.close());

  it("outlive the call timeout while the service keeps sending", async () => {
    // A timeout well above the 100 ms between messages: a loaded machine (a CI run building tools beside it) can stall
    // the event loop for a few hundred milliseconds, which is not what this measures.
    const client = createServiceClient(Health, server.url, { timeoutMs: 1_000 });
    const started = Date.now();
    let flips = 0;
    const ticker = setInterval(() => health.setServing(++flips % 2 === 0), 100);
    const seen: number[] = [];
    try {
      for await (const message of client.watch({ service: "" })) {
        seen.push(message.status);
        if (Date.now() - started > 3_000) break;
      }
    } finally {
      clearInterval(ticker);
      health.setServing(true);
    }
    // Three times the timeout, one message every 100 ms: a deadline would have ended it after 1 s.
    expect(Date.now() - started).toBeGreaterThan(3_000);
    expect(seen.length).toBeGreaterThan(10);
  });

  it("fail with DeadlineExceeded when the service sends nothing for the timeout", async () => {
    const client = createServiceClient(Health, server.url, { timeoutMs: 300 });
    const started = Date.now();
    const seen: number[] = [];
    const failure = await (async () => {
      for await (const message of client.watch({ service: "" })) seen.push(message.status);
    })().then(
      () => "ended",
      (err: unknown) => err,
    );
    expect(seen).toHaveLength(1);
    expect(failure).toBeInstanceOf(ConnectError);
    expect((failure as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect((failure as ConnectError).message).toContain("sent nothing for 300 ms");
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("do not count the time the caller takes between messages", async () => {
    const client = createServiceClient(Health, server.url, { timeoutMs: 300 });
    const it = client.watch({ service: "" })[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(false);
    // The caller is slow: a second before it asks again, while the service has a message ready for it.
    health.setServing(false);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const next = await it.next();
    expect(next.done).toBe(false);
    health.setServing(true);
    await it.return?.();
  });

  it("leave unary calls to their deadline", async () => {
    const client = createServiceClient(Health, server.url, { timeoutMs: 5_000 });
    expect((await client.check({ service: "" })).status).toBeDefined();
  });
});
