import { connect, createServer, type Server, type Socket } from "node:net";
import { getFreePort } from "../ports/ports.js";
import { type BalancerTarget, startBalancer } from "./balancer.js";

/** A TCP server that writes its name to every connection. */
async function namedServer(name: string): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.end(name));
  const port = await getFreePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { server, port };
}

/** What a new connection through the balancer reads. */
function ask(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: "127.0.0.1", port });
    let data = "";
    socket.on("data", (d) => {
      data += d;
    });
    socket.on("close", () => resolve(data));
    socket.on("error", reject);
  });
}

function target(name: string, port: number, ready = true): BalancerTarget & { down: number } {
  let up = ready;
  const t = {
    name,
    host: "127.0.0.1",
    port,
    down: 0,
    ready: () => up,
    markDown: () => {
      up = false;
      t.down++;
    },
  };
  return t;
}

describe("startBalancer", () => {
  const servers: Server[] = [];
  afterAll(() => {
    for (const s of servers) s.close();
  });

  it("hands each new connection to the next ready target in turn, and counts them", async () => {
    const a = await namedServer("a");
    const b = await namedServer("b");
    servers.push(a.server, b.server);
    const balancer = await startBalancer({
      name: "t",
      host: "127.0.0.1",
      port: await getFreePort(),
      targets: [target("a", a.port), target("b", b.port)],
    });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await ask(balancer.port));
    expect(answers).toEqual(["a", "b", "a", "b"]);
    expect(balancer.connections()).toEqual({ a: 2, b: 2 });
    await balancer.close();
  });

  it("skips unready targets, and tries them all when none is ready", async () => {
    const a = await namedServer("a");
    const b = await namedServer("b");
    servers.push(a.server, b.server);
    const unready = target("b", b.port, false);
    const balancer = await startBalancer({
      name: "t",
      host: "127.0.0.1",
      port: await getFreePort(),
      targets: [target("a", a.port), unready],
    });
    expect([await ask(balancer.port), await ask(balancer.port), await ask(balancer.port)]).toEqual(["a", "a", "a"]);
    await balancer.close();

    const none = await startBalancer({
      name: "t",
      host: "127.0.0.1",
      port: await getFreePort(),
      targets: [target("a", a.port, false), target("b", b.port, false)],
    });
    expect(new Set([await ask(none.port), await ask(none.port)])).toEqual(new Set(["a", "b"]));
    await none.close();
  });

  it("passes a connection a target refused on to the next one, and takes the refusing one out of rotation", async () => {
    const b = await namedServer("b");
    servers.push(b.server);
    const gone = target("gone", await getFreePort());
    const balancer = await startBalancer({
      name: "t",
      host: "127.0.0.1",
      port: await getFreePort(),
      targets: [gone, target("b", b.port)],
    });
    expect(await ask(balancer.port)).toBe("b");
    expect(gone.down).toBe(1);
    expect(gone.ready()).toBe(false);
    expect(await ask(balancer.port)).toBe("b");
    expect(balancer.connections()).toEqual({ gone: 0, b: 2 });
    await balancer.close();
  });

  it("forwards both ways until either side closes, and close() cuts open connections", async () => {
    const echo = createServer((socket) => socket.pipe(socket));
    const port = await getFreePort();
    await new Promise<void>((resolve) => echo.listen(port, "127.0.0.1", resolve));
    servers.push(echo);
    const balancer = await startBalancer({
      name: "t",
      host: "127.0.0.1",
      port: await getFreePort(),
      targets: [target("echo", port)],
    });
    const socket = connect({ host: "127.0.0.1", port: balancer.port });
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    const echoed = new Promise<string>((resolve) => socket.once("data", (d) => resolve(String(d))));
    socket.write("ping");
    expect(await echoed).toBe("ping");
    await balancer.close();
    await closed;
  });
});
