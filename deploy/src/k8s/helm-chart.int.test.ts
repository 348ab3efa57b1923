import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { cacheDir } from "../host/paths.js";
import { ferretDbSqliteUrl } from "../stack/servers.js";
import { ensureTool } from "../tools/go-build.js";
import { createMachineProbe, HELM, KUBECTL_VALIDATE, planTool, type ToolSpec } from "../tools/tools.js";
import { CHART_PROCESSES, chartRuleViolations, type K8sObject, parseManifests } from "./helm-rules.js";

// Offline validation of the Helm chart (issue 14, item 3): helm and kubectl-validate are built into the same tool
// cache as the stack's servers (ensureTool; the first build takes several minutes each), then the chart is linted,
// rendered with its default values and with every values file of its ci/ folder, each rendering is validated against
// Kubernetes 1.30's schemas, and the chart's rules are checked on the rendered objects.

const CHART = join(__dirname, "..", "..", "helm", "conveyor");
const CI_VALUES = readdirSync(join(CHART, "ci"))
  .filter((f) => f.endsWith(".yaml"))
  .sort();
const RENDERINGS = ["default", ...CI_VALUES];
/** The first build of both tools on 2 cores takes up to 20 minutes; later runs find them in the cache. */
const BUILD_TIMEOUT_MS = 40 * 60_000;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(command, args, { maxBuffer: 64 * 1024 * 1024, encoding: "utf8" }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

let helm = "";
let kubectlValidate = "";
let work = "";
const rendered = new Map<string, { text: string; objects: K8sObject[]; dir: string }>();

function valuesArgs(name: string): string[] {
  return name === "default" ? [] : ["-f", join(CHART, "ci", name)];
}

beforeAll(async () => {
  const log = (line: string) => process.stderr.write(`[helm chart test] ${line}\n`);
  work = mkdtempSync(join(tmpdir(), "conveyor-helm-"));
  const ctx = { cache: cacheDir(process.env), logsDir: join(work, "logs"), env: process.env, log };
  // HELM_BIN and KUBECTL_VALIDATE_BIN name binaries one already has; else the cached build (built on first use).
  const tool = async (spec: ToolSpec) => {
    const choice = planTool(spec, process.env, ctx.cache, createMachineProbe(process.env));
    return choice.source === "env" ? choice.path : await ensureTool(spec, ctx);
  };
  helm = await tool(HELM);
  kubectlValidate = await tool(KUBECTL_VALIDATE);
  for (const name of RENDERINGS) {
    const dir = join(work, basename(name, ".yaml"));
    mkdirSync(dir);
    const common = ["template", "conveyor", CHART, "--namespace", "ci", ...valuesArgs(name)];
    const text = await run(helm, common);
    if (text.code !== 0) throw new Error(`helm template (${name}) failed: ${text.stderr}`);
    const files = await run(helm, [...common, "--output-dir", dir]);
    if (files.code !== 0) throw new Error(`helm template --output-dir (${name}) failed: ${files.stderr}`);
    rendered.set(name, { text: text.stdout, objects: parseManifests(text.stdout), dir });
  }
}, BUILD_TIMEOUT_MS);

afterAll(() => {
  if (work !== "") rmSync(work, { recursive: true, force: true });
});

function objects(name: string): K8sObject[] {
  const r = rendered.get(name);
  if (r === undefined) throw new Error(`${name} was not rendered`);
  return r.objects;
}

const find = (name: string, kind: string) => objects(name).filter((o) => o.kind === kind);
const component = (o: K8sObject) => o.metadata?.labels?.["app.kubernetes.io/component"];

describe("the Helm chart deploy/helm/conveyor", () => {
  it("keeps at least three values files in ci/ (external stores, HA, evaluation stores)", () => {
    expect(CI_VALUES).toEqual(["evaluation-values.yaml", "external-values.yaml", "ha-values.yaml"]);
  });

  it.each(RENDERINGS)("passes helm lint --strict with %s values", async (name) => {
    const res = await run(helm, ["lint", "--strict", CHART, ...valuesArgs(name)]);
    expect(`${res.stdout}${res.stderr}`).toContain("0 chart(s) failed");
    expect(res.code).toBe(0);
  });

  it.each(RENDERINGS)(
    "renders with %s values manifests kubectl-validate finds valid for Kubernetes 1.30",
    async (name) => {
      const dir = rendered.get(name)?.dir ?? "";
      const res = await run(kubectlValidate, [dir, "--version", "1.30"]);
      expect({ code: res.code, output: `${res.stdout}${res.stderr}` }).toEqual({ code: 0, output: expect.any(String) });
      // Every rendered file was checked and reported OK, none with an error.
      const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
      expect(files.length).toBeGreaterThanOrEqual(6);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: kubectl-validate colours its verdicts.
      expect(res.stdout.match(/\.\.\.(\x1b\[\d+m)?OK/g) ?? []).toHaveLength(files.length);
      expect(`${res.stdout}${res.stderr}`).not.toMatch(/ERROR|Invalid value/);
      expect(objects(name).length).toBeGreaterThan(20);
    },
  );

  it.each(RENDERINGS)("keeps the chart's rules with %s values", (name) => {
    expect(chartRuleViolations(objects(name))).toEqual([]);
  });

  it("runs a Deployment and a ClusterIP Service per backend service and for the gateway", () => {
    for (const name of RENDERINGS) {
      const deployments = find(name, "Deployment").map(component);
      expect(deployments).toEqual(expect.arrayContaining([...CHART_PROCESSES]));
      for (const svc of find(name, "Service")) expect(svc.spec.type ?? "ClusterIP").toBe("ClusterIP");
    }
  });

  it("probes the backends' health port (/healthz, /readyz) and the gateway's /healthz", () => {
    for (const d of find("default", "Deployment")) {
      const c = d.spec.template.spec.containers[0];
      if (component(d) === "gateway") {
        expect(c.readinessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
        expect(c.ports).toEqual([{ name: "http", containerPort: 8080, protocol: "TCP" }]);
      } else {
        expect(c.startupProbe.httpGet).toEqual({ path: "/healthz", port: "health" });
        expect(c.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "health" });
        expect(c.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "health" });
        const grpc = c.ports.find((p: { name: string }) => p.name === "grpc").containerPort;
        expect(c.ports).toContainEqual({ name: "health", containerPort: grpc + 100, protocol: "TCP" });
        expect(c.env).toContainEqual({ name: "HEALTH_PORT", value: String(grpc + 100) });
      }
    }
  });

  it("HA: three replicas of everything, autoscaled, with PodDisruptionBudgets keeping two", () => {
    const hpas = find("ha-values.yaml", "HorizontalPodAutoscaler");
    expect(hpas.map((h) => h.spec.scaleTargetRef.name).sort()).toEqual(
      CHART_PROCESSES.map((p) => `conveyor-${p}`).sort(),
    );
    for (const h of hpas) expect(h.spec.minReplicas).toBe(3);
    const pdbs = find("ha-values.yaml", "PodDisruptionBudget");
    expect(pdbs).toHaveLength(CHART_PROCESSES.length);
    for (const p of pdbs) expect(p.spec).toMatchObject({ minAvailable: 2 });
  });

  it("routes /v2 and /v3 to the gateway, and /objects only with the artifact proxy", () => {
    const paths = (name: string) =>
      find(name, "Ingress").flatMap((i) =>
        i.spec.rules.flatMap((r: { http: { paths: { path: string }[] } }) => r.http.paths.map((p) => p.path)),
      );
    expect(paths("default")).toEqual(["/v2", "/v3"]);
    expect(paths("external-values.yaml")).toEqual(["/v2", "/v3", "/objects"]);
    expect(paths("evaluation-values.yaml")).toEqual([]);
  });

  it("keeps MongoDB and S3 credentials in Secrets, never in the ConfigMap or the pod specs", () => {
    for (const name of RENDERINGS) {
      const configMap = JSON.stringify(find(name, "ConfigMap"));
      const pods = JSON.stringify(find(name, "Deployment"));
      expect(configMap).not.toMatch(/mongodb:\/\/|S3_ACCESS_KEY|S3_SECRET_KEY|change-me|example-secret-key/);
      expect(pods).not.toMatch(/mongodb:\/\/|change-me|example-secret-key/);
    }
    // Inline values go into the chart's Secret; by default the operator's Secrets are referenced.
    // (Besides the source-provider credentials key, which the chart makes once for the notifications service.)
    const stores = (name: string) =>
      find(name, "Secret").filter((s) => s.metadata?.labels?.["app.kubernetes.io/component"] !== "notifications");
    const secret = stores("external-values.yaml")[0];
    expect(Object.keys(secret?.stringData ?? {}).sort()).toEqual(["mongodb-url", "s3-access-key", "s3-secret-key"]);
    expect(stores("default")).toEqual([]);
    const builds = find("default", "Deployment").find((d) => component(d) === "builds");
    expect(builds?.spec.template.spec.containers[0].env).toContainEqual({
      name: "MONGODB_URL",
      valueFrom: { secretKeyRef: { name: "conveyor-mongodb", key: "mongodb-url" } },
    });
  });

  it("runs the bootstrap Job as a post-install and post-upgrade hook, and agents with the token from a Secret", () => {
    const job = find("external-values.yaml", "Job")[0];
    expect(job?.metadata?.annotations?.["helm.sh/hook"]).toBe("post-install,post-upgrade");
    expect(job?.spec.template.spec.containers[0].command).toEqual(["node", "/app/deploy/dist/k8s-bootstrap-main.js"]);
    const agent = find("external-values.yaml", "Deployment").find((d) => component(d) === "agent");
    expect(agent?.spec.template.spec.containers[0].env).toContainEqual({
      name: "BUILDKITE_AGENT_TOKEN",
      valueFrom: { secretKeyRef: { name: "conveyor-credentials", key: "agent-token" } },
    });
    expect(find("default", "Deployment").some((d) => component(d) === "agent")).toBe(false);
  });

  it("runs the evaluation stores only when asked, and points the services at them", () => {
    const stores = (name: string) =>
      find(name, "Deployment")
        .map(component)
        .filter((c) => ["nats", "ferretdb", "s3"].includes(c ?? ""));
    expect(stores("default")).toEqual([]);
    expect(stores("evaluation-values.yaml").sort()).toEqual(["ferretdb", "nats", "s3"]);
    const config = find("evaluation-values.yaml", "ConfigMap")[0]?.data;
    expect(config).toMatchObject({ NATS_URL: "nats://conveyor-nats:4222", S3_ENDPOINT: "http://conveyor-s3:7070" });
    // The chart's FerretDB runs with the launcher's SQLite settings.
    const ferretdb = find("evaluation-values.yaml", "Deployment").find((d) => component(d) === "ferretdb");
    expect(ferretdb?.spec.template.spec.containers[0].env).toContainEqual({
      name: "FERRETDB_SQLITE_URL",
      value: ferretDbSqliteUrl("/state"),
    });
  });

  it("rejects bad values with messages that name the value", async () => {
    const bad = async (...set: string[]) => {
      const res = await run(helm, ["template", "conveyor", CHART, ...set.flatMap((s) => ["--set", s])]);
      expect(res.code).not.toBe(0);
      return res.stderr;
    };
    expect(await bad("defaults.replicaCount=0")).toMatch(/\/defaults\/replicaCount.*minimum/);
    expect(await bad("logLevel=loud")).toMatch(/\/logLevel/);
    expect(await bad("services.web.replicaCount=2")).toMatch(/additional properties 'web' not allowed/);
    expect(await bad("containerSecurityContext.allowPrivilegeEscalation=true")).toMatch(/allowPrivilegeEscalation/);
    expect(await bad("mongodb.existingSecret=")).toMatch(/set mongodb.url, or mongodb.existingSecret/);
    expect(await bad("s3.accessKey=only-one")).toMatch(/set both s3.accessKey and s3.secretKey/);
  });
});
