import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { Role } from "@conveyor/proto/identity";
import { createLogger, currentRequestId } from "@conveyor/runtime";
import { buildTestApp, type FakeWorld, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");

function world(): FakeWorld {
  return {
    orgs: [acme],
    users: [ann],
    tokens: new Map([["full", makePrincipal(ann, ["write_pipelines", "read_pipelines"], [[acme, Role.ADMIN]])]]),
    revoked: [],
  };
}

/** A gateway whose pipelines service records the request id each call carried and fails with an internal error. */
async function harness() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const seen: Array<{ header: string | null; context: string | undefined }> = [];
  const { app } = await buildTestApp(
    world(),
    {
      pipelines: {
        createPipeline(_req, ctx) {
          seen.push({ header: ctx.requestHeader.get("x-request-id"), context: currentRequestId() });
          throw new Error("the store is on fire");
        },
      },
    },
    {},
    { logger: createLogger("gateway", "info", sink) },
  );
  const create = (headers: Record<string, string> = {}) =>
    app.inject({
      method: "POST",
      url: "/v2/organizations/acme/pipelines",
      headers: { authorization: "Bearer full", "content-type": "application/json", ...headers },
      payload: { name: "Web", repository: "git@example.com:acme/web.git" },
    });
  return { app, lines, seen, create };
}

describe("request ids", () => {
  it("keeps a valid X-Request-Id: answered, carried by the RPC it makes after parsing the body, named in its logs", async () => {
    const { app, lines, seen, create } = await harness();
    const res = await create({ "x-request-id": "trace-42.abc" });
    expect(res.statusCode).toBe(500);
    expect(res.headers["x-request-id"]).toBe("trace-42.abc");
    expect(seen).toEqual([{ header: "trace-42.abc", context: "trace-42.abc" }]);
    const mine = lines.filter((line) => line.requestId === "trace-42.abc").map((line) => line.msg);
    expect(mine).toEqual(expect.arrayContaining(["request failed", "request"]));
    // Named once per line, by the mixin (a Fastify binding would repeat the key).
    expect(lines.every((line) => !("reqId" in line))).toBe(true);
    await app.close();
  });

  it("keeps the context over a real socket, where the body arrives after the request starts", async () => {
    const { app, seen, lines } = await harness();
    const url = await app.listen({ host: "127.0.0.1", port: 0 });
    const res = await fetch(`${url}/v2/organizations/acme/pipelines`, {
      method: "POST",
      headers: { authorization: "Bearer full", "content-type": "application/json", "x-request-id": "socket-1" },
      body: JSON.stringify({ name: "Web", repository: "git@example.com:acme/web.git", description: "x".repeat(3000) }),
    });
    expect(res.headers.get("x-request-id")).toBe("socket-1");
    expect(seen).toEqual([{ header: "socket-1", context: "socket-1" }]);
    expect(lines.filter((line) => line.requestId === "socket-1").map((line) => line.msg)).toContain("request failed");
    await app.close();
  });

  it("keeps the context when the body arrives well after the headers (a slow client)", async () => {
    const { app, seen, lines } = await harness();
    await app.listen({ host: "127.0.0.1", port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const body = JSON.stringify({ name: "Web", repository: "git@example.com:acme/web.git" });
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = httpRequest(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          path: "/v2/organizations/acme/pipelines",
          headers: {
            authorization: "Bearer full",
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
            "x-request-id": "slow-1",
          },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode));
        },
      );
      req.on("error", reject);
      // The headers go first; the body follows once the gateway has authenticated the request and waits for it.
      req.flushHeaders();
      setTimeout(() => req.end(body), 100);
    });
    expect(status).toBe(500);
    expect(seen).toEqual([{ header: "slow-1", context: "slow-1" }]);
    expect(lines.filter((line) => line.requestId === "slow-1").map((line) => line.msg)).toContain("request failed");
    await app.close();
  });

  it.each([
    ["too long", "x".repeat(129)],
    ["with spaces", "a b"],
    ["with a newline escape", "a%0Ab"],
    ["empty", ""],
  ])("replaces an invalid id (%s) with a new UUID", async (_what, id) => {
    const { app, seen, create } = await harness();
    const res = await create({ "x-request-id": id });
    const answered = String(res.headers["x-request-id"]);
    expect(answered).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(seen[0]?.header).toBe(answered);
    await app.close();
  });

  it("gives every answer an id, errors before any route included (401, 404)", async () => {
    const { app } = await harness();
    const unauthenticated = await app.inject({ method: "GET", url: "/v2/organizations/acme/pipelines" });
    const unknown = await app.inject({ method: "GET", url: "/v2/nowhere", headers: { "x-request-id": "abc" } });
    expect(unauthenticated.statusCode).toBe(401);
    expect(unauthenticated.headers["x-request-id"]).toBeTruthy();
    expect(unknown.headers["x-request-id"]).toBe("abc");
    await app.close();
  });

  it("gives two requests without an id different ids", async () => {
    const { app, create } = await harness();
    const [a, b] = await Promise.all([create(), create()]);
    expect(a.headers["x-request-id"]).not.toBe(b.headers["x-request-id"]);
    await app.close();
  });
});
