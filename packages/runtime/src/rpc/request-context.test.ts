import { Writable } from "node:stream";
import { IdentityService } from "@conveyor/proto/identity";
import { PipelinesService } from "@conveyor/proto/pipelines";
import { createLogger } from "../process/logger.js";
import { createServiceClient } from "./clients.js";
import { createHealthState } from "./health.js";
import { currentRequestId, isValidRequestId, requestIdFrom, runWithRequestId } from "./request-context.js";
import { type RpcServer, startRpcServer } from "./rpc-server.js";

describe("request ids across services", () => {
  const servers: RpcServer[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = createLogger("test", "info", sink);
  let front: ReturnType<typeof createServiceClient<typeof PipelinesService>>;

  async function serve(routes: Parameters<typeof startRpcServer>[0]["routes"]): Promise<RpcServer> {
    const server = await startRpcServer({
      host: "127.0.0.1",
      port: 0,
      healthPort: 0,
      routes,
      health: createHealthState([]),
      logger: createLogger("test", "silent"),
    });
    servers.push(server);
    return server;
  }

  beforeAll(async () => {
    // The back service names the request id it was called in; the front one calls it and logs.
    const back = await serve((router) =>
      router.service(IdentityService, {
        getOrganization: () => ({ organization: { name: currentRequestId() ?? "(none)" } }),
      }),
    );
    const identity = createServiceClient(IdentityService, back.url);
    const frontServer = await serve((router) =>
      router.service(PipelinesService, {
        async getPipeline() {
          logger.info("front served a call");
          const { organization } = await identity.getOrganization({ slug: "acme" });
          return { pipeline: { name: organization?.name ?? "" } };
        },
      }),
    );
    front = createServiceClient(PipelinesService, frontServer.url);
  });

  afterAll(() => Promise.all(servers.map((s) => s.close())));

  it("serves a call in the context of the id it carries, which every call it makes carries on, and its logs name", async () => {
    const { pipeline } = await front.getPipeline({}, { headers: { "x-request-id": "req-7" } });
    expect(pipeline?.name).toBe("req-7");
    expect(lines.filter((l) => l.msg === "front served a call").map((l) => l.requestId)).toEqual(["req-7"]);
  });

  it("sends the id of the caller's context when the caller sets none", async () => {
    const { pipeline } = await runWithRequestId("from-context", () => front.getPipeline({}));
    expect(pipeline?.name).toBe("from-context");
  });

  it("serves a call without an id (or with an invalid one) outside any request context", async () => {
    expect((await front.getPipeline({})).pipeline?.name).toBe("(none)");
    const invalid = await front.getPipeline({}, { headers: { "x-request-id": "has space" } });
    expect(invalid.pipeline?.name).toBe("(none)");
  });

  it("keeps two concurrent requests' ids apart", async () => {
    const names = await Promise.all(
      ["a", "b", "c", "d"].map((id) => front.getPipeline({}, { headers: { "x-request-id": id } })),
    );
    expect(names.map((r) => r.pipeline?.name)).toEqual(["a", "b", "c", "d"]);
  });
});

describe("requestIdFrom", () => {
  it("keeps valid ids and replaces the rest", () => {
    expect(requestIdFrom("abc-123_x.y:z/w+v=u@t")).toBe("abc-123_x.y:z/w+v=u@t");
    expect(requestIdFrom(["first", "second"])).toBe("first");
    for (const bad of [undefined, null, "", "a b", "é", "x".repeat(129), "a\nb"]) {
      expect(isValidRequestId(bad)).toBe(false);
      expect(requestIdFrom(bad)).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});
