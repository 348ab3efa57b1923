import { portsFromEnv } from "../ports/ports.js";
import { createTopology, processEnv, readinessUrl } from "./services.js";

const ports = portsFromEnv({});
const s3 = { endpoint: "http://127.0.0.1:9100", accessKey: "ak", secretKey: "sk", bucket: "b", region: "r" };
const topo = createTopology({}, ports, {
  mongodbUrl: "mongodb://127.0.0.1:27117",
  natsUrl: "nats://127.0.0.1:4322",
  s3,
});

describe("processEnv", () => {
  it("gives the gateway its certificate, key and TLS port (a replica its slot's second port), none without TLS", () => {
    const tls = { certFile: "/d/tls/gateway.pem", keyFile: "/d/tls/gateway-key.pem", port: 8443 };
    expect(processEnv("gateway", { ...topo, tls }, { TLS_PORT: "1" })).toMatchObject({
      TLS_CERT_FILE: "/d/tls/gateway.pem",
      TLS_KEY_FILE: "/d/tls/gateway-key.pem",
      TLS_PORT: "8443",
    });
    const slot = { name: "gateway-2", port: 20001, healthPort: 20002 };
    expect(processEnv("gateway", { ...topo, tls }, {}, slot).TLS_PORT).toBe("20002");
    const plain = processEnv("gateway", topo, { TLS_CERT_FILE: "/x", TLS_PORT: "1" });
    expect([plain.TLS_CERT_FILE, plain.TLS_PORT]).toEqual([undefined, undefined]);
    expect(processEnv("builds", { ...topo, tls }, {}).TLS_CERT_FILE).toBeUndefined();
  });

  it("gives a backend its ports, servers and the other services' URLs, not the launcher's own PORT/HOST", () => {
    const env = processEnv("identity", topo, { PORT: "1", HOST: "0.0.0.0", MONGODB_DATABASE: "shared", PATH: "/bin" });
    expect(env).toMatchObject({
      HOST: "127.0.0.1",
      PORT: "7101",
      HEALTH_PORT: "7201",
      MONGODB_URL: "mongodb://127.0.0.1:27117",
      NATS_URL: "nats://127.0.0.1:4322",
      AGENTS_URL: "http://127.0.0.1:7105",
      NOTIFICATIONS_URL: "http://127.0.0.1:7106",
      LOG_LEVEL: "info",
      PATH: "/bin",
    });
    expect(env.MONGODB_DATABASE).toBeUndefined();
    expect(env.S3_ENDPOINT).toBeUndefined();
  });

  it("gives only artifacts the S3 settings", () => {
    expect(processEnv("artifacts", topo, {})).toMatchObject({
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: "b",
      S3_SECRET_KEY: "sk",
    });
  });

  it("gives the gateway its public URL and every backend URL", () => {
    const env = processEnv("gateway", topo, {});
    expect(env).toMatchObject({
      HOST: "127.0.0.1",
      PORT: "8080",
      PUBLIC_URL: "http://127.0.0.1:8080",
      IDENTITY_URL: "http://127.0.0.1:7101",
      BUILDS_URL: "http://127.0.0.1:7103",
    });
    expect(env.HEALTH_PORT).toBeUndefined();
    expect(env.WEB_URL).toBeUndefined();
  });

  it("gives only the notifications and agents services the credentials key", () => {
    const keyed = { ...topo, credentialsKey: "a2V5" };
    expect(processEnv("notifications", keyed, {}).CREDENTIALS_ENCRYPTION_KEY).toBe("a2V5");
    expect(processEnv("agents", keyed, {}).CREDENTIALS_ENCRYPTION_KEY).toBe("a2V5");
    expect(processEnv("builds", keyed, {}).CREDENTIALS_ENCRYPTION_KEY).toBeUndefined();
    expect(processEnv("gateway", keyed, {}).CREDENTIALS_ENCRYPTION_KEY).toBeUndefined();
    // Not even when the launcher's own environment has them.
    const launcher = { CREDENTIALS_ENCRYPTION_KEY: "a2V5", CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS: "b2xk" };
    expect(processEnv("identity", topo, launcher)).not.toHaveProperty("CREDENTIALS_ENCRYPTION_KEY");
    expect(processEnv("gateway", topo, launcher)).not.toHaveProperty("CREDENTIALS_ENCRYPTION_PREVIOUS_KEYS");
    expect(processEnv("notifications", topo, launcher)).toMatchObject(launcher);
    expect(processEnv("agents", topo, launcher)).toMatchObject(launcher);
  });

  it("passes PUBLIC_URL, WEB_URL, GATEWAY_HOST and LOG_LEVEL from the launcher's environment", () => {
    const custom = createTopology(
      {
        PUBLIC_URL: "https://ci.example.com/",
        WEB_URL: "https://web.example.com",
        GATEWAY_HOST: "0.0.0.0",
        LOG_LEVEL: "debug",
      },
      ports,
      { mongodbUrl: "m", natsUrl: "n", s3 },
    );
    expect(processEnv("gateway", custom, {})).toMatchObject({
      HOST: "0.0.0.0",
      PUBLIC_URL: "https://ci.example.com",
      WEB_URL: "https://web.example.com",
      LOG_LEVEL: "debug",
    });
  });
});

describe("a replica's environment and readiness", () => {
  const slot = { name: "builds-2", port: 40001, healthPort: 40002 };

  it("listens on its slot's ports and reaches the other services through their usual ports (the balancers)", () => {
    expect(processEnv("builds", topo, {}, slot)).toMatchObject({
      PORT: "40001",
      HEALTH_PORT: "40002",
      BUILDS_URL: "http://127.0.0.1:7103",
      PIPELINES_URL: "http://127.0.0.1:7102",
    });
    expect(processEnv("gateway", topo, {}, slot)).toMatchObject({ PORT: "40001", PUBLIC_URL: "http://127.0.0.1:8080" });
    expect(readinessUrl("builds", ports, slot)).toBe("http://127.0.0.1:40002/readyz");
    expect(readinessUrl("gateway", ports, slot)).toBe("http://127.0.0.1:40001/healthz");
  });
});

describe("readinessUrl", () => {
  it("asks backends on their health port and the gateway on its own", () => {
    expect(readinessUrl("builds", ports)).toBe("http://127.0.0.1:7203/readyz");
    expect(readinessUrl("gateway", ports)).toBe("http://127.0.0.1:8080/healthz");
  });
});
