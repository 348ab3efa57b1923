import { join } from "node:path";
import {
  BUILDKITE_AGENT,
  cachedToolPath,
  FERRETDB,
  HELM,
  KUBECTL_VALIDATE,
  type MachineProbe,
  MINIO,
  NATS_SERVER,
  planAgent,
  planMongo,
  planNats,
  planS3,
  planTool,
  VERSITYGW,
} from "./tools.js";

const cache = "/cache";

function probe(opts: { onPath?: string[]; files?: string[] } = {}): MachineProbe {
  return {
    which: (command) => (opts.onPath?.includes(command) ? `/usr/bin/${command}` : undefined),
    exists: (path) => opts.files?.includes(path) ?? false,
  };
}

describe("cachedToolPath", () => {
  it("puts each tool in a folder named with its version", () => {
    expect(cachedToolPath(cache, FERRETDB)).toBe(join(cache, "bin", "ferretdb-v1.24.2-conveyor.10", "ferretdb"));
    expect(cachedToolPath(cache, NATS_SERVER)).toBe(join(cache, "bin", "nats-server-v2.14.5", "nats-server"));
    expect(cachedToolPath(cache, VERSITYGW)).toBe(join(cache, "bin", "versitygw-v1.7.0", "versitygw"));
    expect(cachedToolPath(cache, BUILDKITE_AGENT)).toBe(
      join(cache, "bin", "buildkite-agent-v3.137.0-conveyor.1", "buildkite-agent"),
    );
  });
});

describe("planMongo", () => {
  it("uses the server in MONGODB_URL and starts nothing", () => {
    expect(planMongo({ MONGODB_URL: "mongodb://db:27017", FERRETDB_BIN: "/x" }, cache, probe())).toEqual({
      kind: "external",
      url: "mongodb://db:27017",
    });
  });

  it("prefers a mongod on PATH over FerretDB", () => {
    expect(planMongo({}, cache, probe({ onPath: ["mongod"] }))).toEqual({
      kind: "mongod",
      binary: { tool: "mongod", path: "/usr/bin/mongod", source: "path" },
    });
  });

  it("uses MONGOD_BIN before looking on PATH", () => {
    const plan = planMongo({ MONGOD_BIN: "/opt/mongod" }, cache, probe({ onPath: ["mongod"] }));
    expect(plan).toEqual({ kind: "mongod", binary: { tool: "mongod", path: "/opt/mongod", source: "env" } });
  });

  it("uses FERRETDB_BIN even when a mongod is on PATH", () => {
    const plan = planMongo({ FERRETDB_BIN: "/opt/ferretdb" }, cache, probe({ onPath: ["mongod"] }));
    expect(plan).toEqual({ kind: "ferretdb", binary: { tool: "ferretdb", path: "/opt/ferretdb", source: "env" } });
  });

  it("reuses the cached FerretDB, or plans to build it", () => {
    const cached = cachedToolPath(cache, FERRETDB);
    expect(planMongo({}, cache, probe({ files: [cached] }))).toMatchObject({
      kind: "ferretdb",
      binary: { path: cached, source: "cache" },
    });
    expect(planMongo({}, cache, probe())).toMatchObject({
      kind: "ferretdb",
      binary: { path: cached, source: "build", spec: FERRETDB },
    });
  });

  it("treats blank variables as unset", () => {
    expect(planMongo({ MONGODB_URL: "  ", FERRETDB_BIN: "" }, cache, probe()).kind).toBe("ferretdb");
  });
});

describe("planNats", () => {
  it("never picks an older nats-server from PATH", () => {
    expect(planNats({}, cache, probe({ onPath: ["nats-server"] }))).toMatchObject({
      kind: "nats-server",
      binary: { source: "build", spec: NATS_SERVER },
    });
  });

  it("honours NATS_URL, then NATS_SERVER_BIN", () => {
    expect(planNats({ NATS_URL: "nats://n:4222", NATS_SERVER_BIN: "/x" }, cache, probe())).toEqual({
      kind: "external",
      url: "nats://n:4222",
    });
    expect(planNats({ NATS_SERVER_BIN: "/x" }, cache, probe())).toMatchObject({
      binary: { path: "/x", source: "env" },
    });
  });
});

describe("planS3", () => {
  it("honours S3_ENDPOINT, then MINIO_BIN, then VERSITYGW_BIN, then the cached versitygw", () => {
    const env = { S3_ENDPOINT: "http://s3:9000", MINIO_BIN: "/m", VERSITYGW_BIN: "/v" };
    expect(planS3(env, cache, probe())).toEqual({ kind: "external", endpoint: "http://s3:9000" });
    expect(planS3({ ...env, S3_ENDPOINT: undefined }, cache, probe())).toMatchObject({
      kind: "minio",
      binary: { path: "/m" },
    });
    expect(planS3({ VERSITYGW_BIN: "/v" }, cache, probe())).toMatchObject({
      kind: "versitygw",
      binary: { path: "/v" },
    });
    const cached = cachedToolPath(cache, VERSITYGW);
    expect(planS3({}, cache, probe({ files: [cached] }))).toMatchObject({
      kind: "versitygw",
      binary: { path: cached, source: "cache" },
    });
  });
});

describe("planS3 with CONVEYOR_S3=minio", () => {
  it("builds MinIO into the cache (or uses the cached one); MINIO_BIN and S3_ENDPOINT still win", () => {
    const cached = cachedToolPath(cache, MINIO);
    expect(cached).toBe(join(cache, "bin", "minio-v0.0.0-20260212201848-7aac2a2c5b7c", "minio"));
    expect(planS3({ CONVEYOR_S3: "minio" }, cache, probe())).toMatchObject({
      kind: "minio",
      binary: { path: cached, source: "build", spec: MINIO },
    });
    expect(planS3({ CONVEYOR_S3: "minio" }, cache, probe({ files: [cached] }))).toMatchObject({
      kind: "minio",
      binary: { source: "cache" },
    });
    expect(planS3({ CONVEYOR_S3: "minio", MINIO_BIN: "/m" }, cache, probe())).toMatchObject({
      binary: { path: "/m", source: "env" },
    });
    expect(planS3({ CONVEYOR_S3: "minio", S3_ENDPOINT: "http://s3" }, cache, probe()).kind).toBe("external");
  });
});

describe("planAgent", () => {
  const cached = cachedToolPath(cache, BUILDKITE_AGENT);

  it("uses BUILDKITE_AGENT_BIN first, even when one is on PATH or cached", () => {
    const plan = planAgent(
      { BUILDKITE_AGENT_BIN: "/opt/bk" },
      cache,
      probe({ onPath: ["buildkite-agent"], files: [cached] }),
    );
    expect(plan).toMatchObject({ tool: "buildkite-agent", path: "/opt/bk", source: "env" });
  });

  it("then a buildkite-agent on PATH, before the cache", () => {
    expect(planAgent({}, cache, probe({ onPath: ["buildkite-agent"], files: [cached] }))).toEqual({
      tool: "buildkite-agent",
      path: "/usr/bin/buildkite-agent",
      source: "path",
    });
  });

  it("then the cached build, or plans to build it from deploy/buildkite-agent", () => {
    expect(planAgent({}, cache, probe({ files: [cached] }))).toMatchObject({ path: cached, source: "cache" });
    expect(planAgent({ BUILDKITE_AGENT_BIN: " " }, cache, probe())).toEqual({
      tool: "buildkite-agent",
      path: cached,
      source: "build",
      spec: BUILDKITE_AGENT,
    });
  });

  it("keeps the binary's name, which jobs call it by", () => {
    expect(BUILDKITE_AGENT.binary).toBe("buildkite-agent");
    expect(cached.endsWith("/buildkite-agent")).toBe(true);
  });
});

describe("the chart's tools (helm, kubectl-validate)", () => {
  it("are go installs of the versions the module proxy serves, cached like the servers", () => {
    expect(HELM.build).toEqual({ kind: "go-install", pkg: "helm.sh/helm/v4/cmd/helm@v4.2.4" });
    expect(HELM.minGo).toBe("1.26");
    expect(KUBECTL_VALIDATE.build).toEqual({ kind: "go-install", pkg: "sigs.k8s.io/kubectl-validate@v0.0.4" });
    for (const tool of [HELM, KUBECTL_VALIDATE]) {
      if (tool.build.kind !== "go-install") throw new Error("expected a go install");
      expect(tool.build.pkg.endsWith(`@${tool.version}`)).toBe(true);
    }
    expect(cachedToolPath(cache, HELM)).toBe(join(cache, "bin", "helm-v4.2.4", "helm"));
    expect(cachedToolPath(cache, KUBECTL_VALIDATE)).toBe(
      join(cache, "bin", "kubectl-validate-v0.0.4", "kubectl-validate"),
    );
  });

  it("come from HELM_BIN / KUBECTL_VALIDATE_BIN, else the cache, else are built", () => {
    expect(planTool(HELM, { HELM_BIN: "/opt/helm" }, cache, probe({ onPath: ["helm"] }))).toEqual({
      tool: "helm",
      path: "/opt/helm",
      source: "env",
    });
    const cached = cachedToolPath(cache, KUBECTL_VALIDATE);
    expect(planTool(KUBECTL_VALIDATE, {}, cache, probe({ files: [cached] }))).toMatchObject({ source: "cache" });
    expect(planTool(KUBECTL_VALIDATE, { KUBECTL_VALIDATE_BIN: " " }, cache, probe())).toEqual({
      tool: "kubectl-validate",
      path: cached,
      source: "build",
      spec: KUBECTL_VALIDATE,
    });
  });
});
