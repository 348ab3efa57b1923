import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { EMPTY_ALLOW_LIST, parseAllowList } from "./address-policy.js";
import {
  createOutboundClient,
  guardedLookup,
  isOutboundRefused,
  type OutboundConfig,
  readOutboundConfig,
  urlRefusal,
} from "./outbound-client.js";

const config = (allow: string, over: Partial<OutboundConfig> = {}): OutboundConfig => ({
  allow: parseAllowList(allow),
  connectTimeoutMs: 2_000,
  totalTimeoutMs: 2_000,
  maxRedirects: 3,
  maxResponseBytes: 1_024,
  ...over,
});

describe("urlRefusal", () => {
  it("refuses other schemes, credentials and internal IP literals, in every written form", () => {
    const none = EMPTY_ALLOW_LIST;
    expect(urlRefusal(none, new URL("file:///etc/passwd"))).toMatch(/file:/);
    expect(urlRefusal(none, new URL("ftp://example.com/"))).toMatch(/ftp:/);
    expect(urlRefusal(none, new URL("http://u:p@example.com/"))).toMatch(/credentials/);
    expect(urlRefusal(none, new URL("http://127.0.0.1:8080/"))).toMatch(/loopback/);
    expect(urlRefusal(none, new URL("http://2130706433/"))).toMatch(/loopback/);
    expect(urlRefusal(none, new URL("http://0x7f.1/"))).toMatch(/loopback/);
    expect(urlRefusal(none, new URL("http://[::ffff:169.254.169.254]/"))).toMatch(/linkLocal/);
    expect(urlRefusal(none, new URL("http://[::1]/"))).toMatch(/loopback/);
    expect(urlRefusal(none, new URL("https://example.com/hook"))).toBeNull();
    expect(urlRefusal(parseAllowList("127.0.0.1"), new URL("http://127.0.0.1:1/"))).toBeNull();
  });
});

describe("guardedLookup", () => {
  const fake =
    (addresses: Array<{ address: string; family: number }>) =>
    (_h: string, _o: unknown, cb: (err: Error | null, a: typeof addresses) => void) =>
      cb(null, addresses);

  const run = (lookup: ReturnType<typeof guardedLookup>, all: boolean) =>
    new Promise<{ err: Error | null; rest: unknown[] }>((resolve) =>
      (lookup as unknown as (h: string, o: object, cb: (err: Error | null, ...rest: unknown[]) => void) => void)(
        "hooks.example",
        { all },
        (err, ...rest) => resolve({ err, rest }),
      ),
    );

  it("refuses a name with any internal address (DNS rebinding gets the connection's own answer)", async () => {
    const lookup = guardedLookup(
      EMPTY_ALLOW_LIST,
      fake([
        { address: "93.184.216.34", family: 4 },
        { address: "10.0.0.1", family: 4 },
      ]) as never,
    );
    const { err } = await run(lookup, true);
    expect(isOutboundRefused(err)).toBe(true);
    expect(err?.message).toBe("hooks.example resolves to 10.0.0.1 is a private address");
  });

  it("answers in the form asked: one address, or all", async () => {
    const lookup = guardedLookup(EMPTY_ALLOW_LIST, fake([{ address: "93.184.216.34", family: 4 }]) as never);
    expect((await run(lookup, false)).rest).toEqual(["93.184.216.34", 4]);
    expect((await run(lookup, true)).rest).toEqual([[{ address: "93.184.216.34", family: 4 }]]);
  });

  it("lets an allowed name reach internal addresses", async () => {
    const lookup = guardedLookup(parseAllowList("hooks.example"), fake([{ address: "127.0.0.1", family: 4 }]) as never);
    expect((await run(lookup, false)).err).toBeNull();
  });
});

describe("createOutboundClient against a local server", () => {
  let server: Server;
  let base: string;
  const seen: Array<{ method: string; url: string; body: string }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        seen.push({ method: req.method ?? "", url: req.url ?? "", body });
        if (req.url === "/big") return res.end("x".repeat(10_000));
        if (req.url === "/to-ok") return res.writeHead(307, { location: "/ok" }).end();
        if (req.url === "/see-other") return res.writeHead(303, { location: "/ok" }).end();
        if (req.url === "/to-metadata") return res.writeHead(302, { location: "http://169.254.169.254/latest" }).end();
        if (req.url === "/loop") return res.writeHead(302, { location: "/loop" }).end();
        if (req.url === "/slow") return void setTimeout(() => res.end("late"), 3_000).unref();
        res.writeHead(200, { "content-type": "text/plain" }).end(`ok ${req.method} ${body}`);
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it("refuses loopback without the allow list, sending nothing", async () => {
    const client = createOutboundClient(config(""));
    const before = seen.length;
    await expect(client.request(`${base}/ok`)).rejects.toThrow(/loopback/);
    const port = new URL(base).port;
    const err = await client.request(`http://localhost:${port}/ok`).catch((e: unknown) => e);
    expect(isOutboundRefused(err)).toBe(true);
    expect(seen.length).toBe(before);
    await client.close();
  });

  it("sends to an allowed address and reads the answer", async () => {
    const client = createOutboundClient(config("127.0.0.1"));
    const res = await client.request(`${base}/ok`, { method: "POST", body: "hi", headers: { "x-a": "1" } });
    expect(res).toMatchObject({ status: 200, body: "ok POST hi", truncated: false });
    await client.close();
  });

  it("reads an answer only up to the bound", async () => {
    const client = createOutboundClient(config("127.0.0.1"));
    const res = await client.request(`${base}/big`);
    expect(res.body).toHaveLength(1_024);
    expect(res.truncated).toBe(true);
    await client.close();
  });

  it("follows redirects itself: 307 keeps the method and body, 303 becomes a GET", async () => {
    const client = createOutboundClient(config("127.0.0.1"));
    expect((await client.request(`${base}/to-ok`, { method: "POST", body: "b" })).body).toBe("ok POST b");
    const res = await client.request(`${base}/see-other`, { method: "POST", body: "b" });
    expect(res.body).toBe("ok GET ");
    expect(res.url).toBe(`${base}/ok`);
    await client.close();
  });

  it("refuses a redirect to an internal address and stops after a few redirects", async () => {
    const client = createOutboundClient(config("127.0.0.1"));
    const err = await client.request(`${base}/to-metadata`).catch((e: unknown) => e);
    expect(isOutboundRefused(err)).toBe(true);
    await expect(client.request(`${base}/loop`)).rejects.toThrow("more than 3 redirects");
    await client.close();
  });

  it("gives up after the total timeout", async () => {
    const client = createOutboundClient(config("127.0.0.1", { totalTimeoutMs: 300 }));
    await expect(client.request(`${base}/slow`)).rejects.toThrow();
    await client.close();
  });
});

describe("readOutboundConfig", () => {
  it("reads the allow list and bounds, and names the variable of a bad list", () => {
    const c = readOutboundConfig({ OUTBOUND_ALLOW_HOSTS: "127.0.0.1,gitea", OUTBOUND_TIMEOUT_MS: "5000" });
    expect([...c.allow.hosts]).toEqual(["gitea"]);
    expect(c.totalTimeoutMs).toBe(5_000);
    expect(() => readOutboundConfig({ OUTBOUND_ALLOW_HOSTS: "10.0.0.0/99" })).toThrow("OUTBOUND_ALLOW_HOSTS");
  });
});
