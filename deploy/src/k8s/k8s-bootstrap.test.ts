import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createSecretsApi, secretManifest } from "./k8s-bootstrap.js";

// createSecretsApi's requests, answered by a stand-in for the few Kubernetes API routes it uses.
describe("createSecretsApi", () => {
  let server: Server;
  let url: string;
  const stored = new Map<string, { data: Record<string, string> }>();
  const seen: string[] = [];

  const body = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let text = "";
      req.on("data", (d) => {
        text += d;
      });
      req.on("end", () => resolve(text));
    });

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
      const match = /^\/api\/v1\/namespaces\/ci\/secrets(?:\/([\w.-]+))?$/.exec(req.url ?? "");
      const name = match?.[1];
      const reply = (status: number, value: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(value));
      };
      if (!match) return reply(403, { reason: "Forbidden" });
      if (req.method === "GET" && name) return stored.has(name) ? reply(200, stored.get(name)) : reply(404, {});
      if (req.method === "PUT" && name) {
        if (!stored.has(name)) return reply(404, {});
        stored.set(name, JSON.parse(await body(req)));
        return reply(200, stored.get(name));
      }
      if (req.method === "POST" && !name) {
        const secret = JSON.parse(await body(req));
        stored.set(secret.metadata.name, secret);
        return reply(201, secret);
      }
      return reply(403, { reason: "Forbidden" });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("reads nothing, creates the Secret, reads it back decoded, and replaces it", async () => {
    const api = createSecretsApi({ apiUrl: url, namespace: "ci", token: "sa-token" });
    expect(await api.read("creds")).toBeUndefined();
    await api.write("creds", { "api-token": "bkua_1" }, { app: "conveyor" });
    expect(stored.get("creds")).toEqual(secretManifest("creds", "ci", { "api-token": "bkua_1" }, { app: "conveyor" }));
    expect(stored.get("creds")?.data).toEqual({ "api-token": Buffer.from("bkua_1").toString("base64") });
    expect(await api.read("creds")).toEqual({ "api-token": "bkua_1" });
    await api.write("creds", { "api-token": "bkua_2" });
    expect(await api.read("creds")).toEqual({ "api-token": "bkua_2" });
    expect(seen).toEqual([
      "GET /api/v1/namespaces/ci/secrets/creds Bearer sa-token",
      "PUT /api/v1/namespaces/ci/secrets/creds Bearer sa-token",
      "POST /api/v1/namespaces/ci/secrets Bearer sa-token",
      "GET /api/v1/namespaces/ci/secrets/creds Bearer sa-token",
      "PUT /api/v1/namespaces/ci/secrets/creds Bearer sa-token",
      "GET /api/v1/namespaces/ci/secrets/creds Bearer sa-token",
    ]);
  });

  it("says what the API answered when it refuses", async () => {
    const api = createSecretsApi({ apiUrl: url, namespace: "other", token: "t" });
    await expect(api.read("creds")).rejects.toThrow("reading Secret creds: the Kubernetes API answered 403");
  });
});
