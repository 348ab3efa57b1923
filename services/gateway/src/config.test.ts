import { parseTrustProxy, parseWebhookIps, readGatewayConfig } from "./config.js";

describe("the gateway's artifact URL settings", () => {
  it("signs for the store's endpoint by default, S3_PUBLIC_URL when set, and the gateway with ARTIFACTS_PROXY", () => {
    const env = { PORT: "8080", S3_ENDPOINT: "http://minio.internal:9000" };
    expect(readGatewayConfig(env).artifacts).toEqual({
      storeUrl: "http://minio.internal:9000",
      bucket: "conveyor-artifacts",
      proxy: false,
      urlBase: "http://minio.internal:9000",
    });
    expect(readGatewayConfig({ ...env, S3_PUBLIC_URL: "https://s3.example.com/" }).artifacts.urlBase).toBe(
      "https://s3.example.com",
    );
    const proxied = readGatewayConfig({
      ...env,
      ARTIFACTS_PROXY: "1",
      PUBLIC_URL: "https://ci.example.com",
      S3_PUBLIC_URL: "https://ignored.example.com",
      S3_BUCKET: "b",
    }).artifacts;
    expect(proxied).toEqual({
      storeUrl: "http://minio.internal:9000",
      bucket: "b",
      proxy: true,
      urlBase: "https://ci.example.com/objects",
    });
    expect(() => readGatewayConfig({ ARTIFACTS_PROXY: "maybe" })).toThrow("ARTIFACTS_PROXY");
  });
});

describe("the gateway's rate limit setting", () => {
  it("limits to Buildkite's 200 requests a minute by default, takes RATE_LIMIT_PER_MINUTE, and 0 as off", () => {
    expect(readGatewayConfig({}).rateLimitPerMinute).toBe(200);
    expect(readGatewayConfig({ RATE_LIMIT_PER_MINUTE: "1000" }).rateLimitPerMinute).toBe(1000);
    expect(readGatewayConfig({ RATE_LIMIT_PER_MINUTE: "0" }).rateLimitPerMinute).toBe(0);
    expect(() => readGatewayConfig({ RATE_LIMIT_PER_MINUTE: "-1" })).toThrow("RATE_LIMIT_PER_MINUTE must be >= 0");
    expect(() => readGatewayConfig({ RATE_LIMIT_PER_MINUTE: "lots" })).toThrow("RATE_LIMIT_PER_MINUTE");
  });
});

describe("the gateway's batched build reads settings", () => {
  it("batches by default with a 40 ms slot, takes BATCH_BUILD_READS and BATCH_SLOT_MS, and refuses a slot out of range", () => {
    expect(readGatewayConfig({})).toMatchObject({ batchBuildReads: true, batchSlotMs: 40 });
    expect(readGatewayConfig({ BATCH_BUILD_READS: "false", BATCH_SLOT_MS: "250" })).toMatchObject({
      batchBuildReads: false,
      batchSlotMs: 250,
    });
    expect(() => readGatewayConfig({ BATCH_SLOT_MS: "0" })).toThrow("BATCH_SLOT_MS");
    expect(() => readGatewayConfig({ BATCH_SLOT_MS: "60001" })).toThrow("BATCH_SLOT_MS");
  });
});

describe("the gateway's live stream limits", () => {
  it("holds 20 live pages per person and 1000 in all by default, takes LIVE_STREAMS_PER_PERSON and LIVE_STREAMS", () => {
    expect(readGatewayConfig({}).liveStreams).toEqual({ perPerson: 20, total: 1000 });
    expect(readGatewayConfig({ LIVE_STREAMS_PER_PERSON: "250", LIVE_STREAMS: "5000" }).liveStreams).toEqual({
      perPerson: 250,
      total: 5000,
    });
    expect(() => readGatewayConfig({ LIVE_STREAMS_PER_PERSON: "0" })).toThrow("LIVE_STREAMS_PER_PERSON");
    expect(() => readGatewayConfig({ LIVE_STREAMS: "many" })).toThrow("LIVE_STREAMS");
  });
});

describe("the gateway's TRUST_PROXY setting", () => {
  it("believes no proxy by default, every one with true, the nearest hops with a number, or the addresses given", () => {
    expect(readGatewayConfig({}).trustProxy).toBe(false);
    expect(parseTrustProxy("false")).toBe(false);
    expect(parseTrustProxy("true")).toBe(true);
    expect(parseTrustProxy("2")).toBe(2);
    expect(parseTrustProxy("10.0.0.0/8, 127.0.0.1,::1,fd00::/8")).toEqual([
      "10.0.0.0/8",
      "127.0.0.1",
      "::1",
      "fd00::/8",
    ]);
    expect(readGatewayConfig({ TRUST_PROXY: "192.168.1.10" }).trustProxy).toEqual(["192.168.1.10"]);
  });

  it("refuses what is none of those, naming it", () => {
    expect(() => parseTrustProxy("0")).toThrow(/0 hops is not between 1 and 100/);
    expect(() => parseTrustProxy("10.0.0.0/8,proxy.example.com")).toThrow(
      /"proxy.example.com" is not an address or CIDR/,
    );
    expect(() => parseTrustProxy("yes")).toThrow(/TRUST_PROXY/);
  });
});

describe("the gateway's WEBHOOK_IPS setting", () => {
  it("publishes no address by default, else the addresses and CIDRs given", () => {
    expect(readGatewayConfig({}).webhookIps).toEqual([]);
    expect(parseWebhookIps(" 203.0.113.7, 198.51.100.0/24,2001:db8::/32 ,")).toEqual([
      "203.0.113.7",
      "198.51.100.0/24",
      "2001:db8::/32",
    ]);
    expect(readGatewayConfig({ WEBHOOK_IPS: "203.0.113.7" }).webhookIps).toEqual(["203.0.113.7"]);
  });

  it("refuses anything else, naming it", () => {
    for (const bad of [
      "hooks.example.com",
      "203.0.113.7/33",
      "2001:db8::/129",
      "203.0.113.0/24/1",
      "300.1.1.1",
      "10.0.0.0/",
    ]) {
      expect(() => parseWebhookIps(`203.0.113.7,${bad}`)).toThrow(`WEBHOOK_IPS: "${bad}" is not an address or CIDR`);
    }
    expect(() => readGatewayConfig({ WEBHOOK_IPS: "nope" })).toThrow(/WEBHOOK_IPS/);
  });
});
