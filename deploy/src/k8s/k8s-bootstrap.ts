import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type BootstrapResult, bootstrap } from "../bootstrap/bootstrap.js";
import type { Credentials } from "../bootstrap/credentials.js";
import { type Env, envValue } from "../host/paths.js";

/** Where Kubernetes mounts a pod's service account: its token and namespace. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Secrets of one namespace, as the bootstrap Job reads and writes them. */
export interface SecretsApi {
  /** The Secret's data, decoded; undefined when there is no such Secret. */
  read(name: string): Promise<Record<string, string> | undefined>;
  /** Creates the Secret, or replaces its data. */
  write(name: string, data: Record<string, string>, labels?: Record<string, string>): Promise<void>;
}

/** The Kubernetes API for the Secrets of a namespace, as the pod's service account (a Role allows it). */
export function createSecretsApi(opts: { apiUrl: string; namespace: string; token: string }): SecretsApi {
  const base = `${opts.apiUrl.replace(/\/$/, "")}/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/secrets`;
  const call = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${opts.token}`,
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    return { status: res.status, text };
  };
  const fail = (what: string, res: { status: number; text: string }) =>
    new Error(`${what}: the Kubernetes API answered ${res.status}: ${res.text.slice(0, 300)}`);
  return {
    async read(name) {
      const res = await call("GET", `${base}/${encodeURIComponent(name)}`);
      if (res.status === 404) return undefined;
      if (res.status !== 200) throw fail(`reading Secret ${name}`, res);
      const data = (JSON.parse(res.text) as { data?: Record<string, string> }).data ?? {};
      return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]));
    },
    async write(name, data, labels = {}) {
      const secret = secretManifest(name, opts.namespace, data, labels);
      const replaced = await call("PUT", `${base}/${encodeURIComponent(name)}`, secret);
      if (replaced.status === 200) return;
      if (replaced.status !== 404) throw fail(`replacing Secret ${name}`, replaced);
      const created = await call("POST", base, secret);
      if (created.status !== 201) throw fail(`creating Secret ${name}`, created);
    },
  };
}

/** An Opaque Secret holding `data` (base64-encoded, as the API wants it). */
export function secretManifest(
  name: string,
  namespace: string,
  data: Record<string, string>,
  labels: Record<string, string> = {},
) {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace, labels },
    type: "Opaque",
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "utf8").toString("base64")])),
  };
}

/**
 * What the credentials Secret holds: the credentials file (which the next run reuses), and the two secrets on
 * their own, for a Deployment's secretKeyRef (the agents' registration token) and for people (the API token).
 */
export function credentialsSecretData(credentials: Credentials): Record<string, string> {
  return {
    "credentials.json": `${JSON.stringify(credentials, null, 2)}\n`,
    "api-token": credentials.apiToken.secret,
    "agent-token": credentials.agentToken.secret,
  };
}

/** Settings of the bootstrap Job, from its environment (the chart sets them). */
export function k8sBootstrapSettings(env: Env) {
  const need = (name: string) => {
    const value = envValue(env, name);
    if (value === undefined) throw new Error(`${name} is required`);
    return value;
  };
  const publicUrl = need("PUBLIC_URL").replace(/\/$/, "");
  const host = need("KUBERNETES_SERVICE_HOST");
  const port = envValue(env, "KUBERNETES_SERVICE_PORT") ?? "443";
  return {
    identityUrl: need("IDENTITY_URL"),
    agentsUrl: need("AGENTS_URL"),
    apiUrl: publicUrl,
    agentUrl: `${publicUrl}/v3`,
    secretName: need("CREDENTIALS_SECRET"),
    kubernetesUrl: `https://${host.includes(":") ? `[${host}]` : host}:${port}`,
    /** How long to wait for the services, which may still be starting when the Job runs. */
    waitMs: Number(envValue(env, "BOOTSTRAP_WAIT_S") ?? "600") * 1000,
  };
}

/**
 * The chart's bootstrap Job (a Helm hook after install and upgrade): makes sure the organization, its admin, the
 * API token and the agent registration token exist (bootstrap(), the same as `npm start`), reusing the ones the
 * credentials Secret names when the services still accept them, and stores the credentials in that Secret. The
 * services may still be starting: bootstrap is tried again every 5 s for up to BOOTSTRAP_WAIT_S.
 */
export async function runK8sBootstrap(
  env: Env,
  log: (line: string) => void,
  secrets?: SecretsApi,
): Promise<BootstrapResult> {
  const settings = k8sBootstrapSettings(env);
  const api =
    secrets ??
    createSecretsApi({
      apiUrl: settings.kubernetesUrl,
      namespace: envValue(env, "POD_NAMESPACE") ?? readFileSync(join(SERVICE_ACCOUNT_DIR, "namespace"), "utf8").trim(),
      token: readFileSync(join(SERVICE_ACCOUNT_DIR, "token"), "utf8").trim(),
    });
  const dir = mkdtempSync(join(tmpdir(), "conveyor-bootstrap-"));
  const credentialsFile = join(dir, "credentials.json");
  try {
    const saved = await api.read(settings.secretName);
    const savedFile = saved?.["credentials.json"];
    if (savedFile) writeFileSync(credentialsFile, savedFile, { mode: 0o600 });
    const deadline = Date.now() + settings.waitMs;
    let result: BootstrapResult;
    for (;;) {
      try {
        result = await bootstrap({
          identityUrl: settings.identityUrl,
          agentsUrl: settings.agentsUrl,
          apiUrl: settings.apiUrl,
          agentUrl: settings.agentUrl,
          credentialsFile,
          env,
          log,
        });
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        log(`the services are not ready yet (${(err as Error).message}); trying again in 5 s`);
        await sleep(5_000);
      }
    }
    await api.write(settings.secretName, credentialsSecretData(result.credentials), {
      "app.kubernetes.io/managed-by": "conveyor-bootstrap",
    });
    const { organization, user } = result.credentials;
    log(
      `organization ${organization.slug} and admin ${user.email} ready; credentials in Secret ${settings.secretName}`,
    );
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
