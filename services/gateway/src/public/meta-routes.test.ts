import Fastify from "fastify";
import { metaRoutes } from "./meta-routes.js";

describe("GET /v2/meta", () => {
  it("publishes the addresses the operator gave as where outbound requests come from, without a token", async () => {
    const app = Fastify();
    metaRoutes(app, { webhookIps: ["203.0.113.7", "2001:db8::/32"] });
    const res = await app.inject({ method: "GET", url: "/v2/meta" });
    expect([res.statusCode, res.json()]).toEqual([200, { webhook_ips: ["203.0.113.7", "2001:db8::/32"] }]);
    await app.close();
  });
});
