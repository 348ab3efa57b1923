import { createServer, get, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { openSse, type SseWriter } from "./sse-writer.js";

// The event stream writer over a real socket: its framing, keep-alive comments, waiting for room, and dropping a
// client that does not read.

const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

/** A server whose one answer is an SSE writer with `opts`; the writer and how it closed, once a client connects. */
async function serve(opts: { maxBufferedBytes?: number; roomBytes?: number; keepAliveMs?: number } = {}) {
  let resolveWriter: (w: SseWriter) => void = () => {};
  const writer = new Promise<SseWriter>((resolve) => {
    resolveWriter = resolve;
  });
  const closed: string[] = [];
  const server = createServer((_req, res) => {
    resolveWriter(
      openSse(res, {
        maxBufferedBytes: opts.maxBufferedBytes ?? 1024 * 1024,
        roomBytes: opts.roomBytes ?? 64 * 1024,
        keepAliveMs: opts.keepAliveMs ?? 60_000,
        retryMs: 1500,
        headers: { "x-extra": "kept" },
        onClose: (why) => closed.push(why),
      }),
    );
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const response = new Promise<IncomingMessage>((resolve) =>
    get(`http://127.0.0.1:${port}/`, { agent: false }, resolve),
  );
  return { writer: await writer, response: await response, closed };
}

const read = (res: IncomingMessage, until: (text: string) => boolean) =>
  new Promise<string>((resolve) => {
    let text = "";
    res.setEncoding("utf8");
    res.on("data", (piece: string) => {
      text += piece;
      if (until(text)) resolve(text);
    });
  });

describe("the SSE writer", () => {
  it("frames events, says how long to wait before reconnecting, keeps quiet streams open, and ends", async () => {
    const { writer, response, closed } = await serve({ keepAliveMs: 20 });
    expect(response.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    expect(response.headers["x-extra"]).toBe("kept");
    writer.send({ event: "log", id: "j:5", data: '{"a":1}' });
    writer.send({ event: "end", data: "{}" });
    const text = await read(response, (t) => t.includes(": keep-alive"));
    expect(text.startsWith('retry: 1500\n\nevent: log\nid: j:5\ndata: {"a":1}\n\nevent: end\ndata: {}\n\n')).toBe(true);
    expect(() => writer.send({ event: "log", data: "two\nlines" })).toThrow("one line");
    writer.end();
    expect(closed).toEqual(["done"]);
    expect(writer.closed).toBe(true);
  });

  it("lets a reader of stored bytes wait for room while the client has much unread, until it reads", async () => {
    const { writer, response } = await serve({ maxBufferedBytes: 64 * 1024 * 1024, roomBytes: 16 * 1024 });
    response.pause();
    const data = JSON.stringify("x".repeat(8 * 1024));
    let room: Promise<void> | undefined;
    for (let i = 0; i < 10_000 && !room; i++) {
      writer.send({ event: "log", data });
      let ready = false;
      const waiting = writer.room().then(() => {
        ready = true;
      });
      await new Promise((resolve) => setImmediate(resolve));
      if (!ready) room = waiting;
    }
    expect(room).toBeDefined();
    response.resume();
    await room;
    expect(writer.closed).toBe(false);
    writer.end();
  });

  it("drops a client that does not read once it holds more than the bound", async () => {
    const { writer, response, closed } = await serve({ maxBufferedBytes: 256 * 1024, roomBytes: 16 * 1024 });
    response.pause();
    const data = JSON.stringify("x".repeat(8 * 1024));
    for (let i = 0; i < 10_000 && !writer.closed; i++) {
      writer.send({ event: "log", data });
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(closed).toEqual(["slow"]);
    // Whoever waits for room is let go once the stream closed.
    await expect(writer.room()).resolves.toBeUndefined();
  });

  it("tells when the client left", async () => {
    const { response, closed } = await serve();
    response.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toEqual(["client"]);
  });
});
