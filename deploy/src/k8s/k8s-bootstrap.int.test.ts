import { randomUUID } from "node:crypto";
import { credentialsSecretData, k8sBootstrapSettings, runK8sBootstrap, type SecretsApi } from "./k8s-bootstrap.js";

// The chart's bootstrap Job against the test stack's real identity and agents services; only the Kubernetes API,
// which no cluster here serves, is a map of Secrets.
function secretsInMemory() {
  const secrets = new Map<string, Record<string, string>>();
  const api: SecretsApi = {
    async read(name) {
      return secrets.get(name);
    },
    async write(name, data) {
      secrets.set(name, { ...data });
    },
  };
  return { secrets, api };
}

const slug = `k8s-${randomUUID().slice(0, 8)}`;
const env = {
  IDENTITY_URL: process.env.IDENTITY_URL,
  AGENTS_URL: process.env.AGENTS_URL,
  PUBLIC_URL: "https://ci.example.com/",
  CREDENTIALS_SECRET: "conveyor-credentials",
  KUBERNETES_SERVICE_HOST: "10.0.0.1",
  POD_NAMESPACE: "ci",
  BOOTSTRAP_ORG_SLUG: slug,
  BOOTSTRAP_ORG_NAME: `K8s ${slug}`,
  BOOTSTRAP_ADMIN_EMAIL: `admin-${slug}@example.com`,
  BOOTSTRAP_WAIT_S: "5",
};

describe("the bootstrap Job", () => {
  it("bootstraps the organization and stores the credentials in the Secret; a second run reuses them", async () => {
    const { secrets, api } = secretsInMemory();
    const first = await runK8sBootstrap(env, () => {}, api);
    expect(first.reused).toEqual({ organization: false, user: false, apiToken: false, agentToken: false });
    const stored = secrets.get("conveyor-credentials");
    expect(stored).toEqual(credentialsSecretData(first.credentials));
    expect(first.credentials).toMatchObject({
      apiUrl: "https://ci.example.com",
      agentUrl: "https://ci.example.com/v3",
      organization: { slug },
    });
    expect(stored?.["api-token"]).toMatch(/^bkua_/);
    expect(stored?.["agent-token"]).toMatch(/^bkat_/);

    // An upgrade runs the Job again: the same organization, admin and tokens.
    const second = await runK8sBootstrap(env, () => {}, api);
    expect(second.reused).toEqual({ organization: true, user: true, apiToken: true, agentToken: true });
    expect(secrets.get("conveyor-credentials")?.["api-token"]).toBe(stored?.["api-token"]);
    expect(secrets.get("conveyor-credentials")?.["agent-token"]).toBe(stored?.["agent-token"]);
  });

  it("gives up after BOOTSTRAP_WAIT_S when the services do not answer, storing nothing", async () => {
    const { secrets, api } = secretsInMemory();
    const lines: string[] = [];
    const started = Date.now();
    await expect(
      runK8sBootstrap({ ...env, IDENTITY_URL: "http://127.0.0.1:1", BOOTSTRAP_WAIT_S: "1" }, (l) => lines.push(l), api),
    ).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(lines.some((l) => l.startsWith("the services are not ready yet"))).toBe(true);
    expect(secrets.size).toBe(0);
  }, 30_000);
});

describe("k8sBootstrapSettings", () => {
  it("reads the Job's environment and names what is missing", () => {
    expect(
      k8sBootstrapSettings({ ...env, KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "6443" }),
    ).toMatchObject({ kubernetesUrl: "https://[fd00::1]:6443", apiUrl: "https://ci.example.com", waitMs: 5_000 });
    expect(() => k8sBootstrapSettings({ ...env, CREDENTIALS_SECRET: "" })).toThrow("CREDENTIALS_SECRET is required");
  });
});
