import { parseAllDocuments } from "yaml";

/**
 * The rules the Helm chart deploy/helm/conveyor must keep (issue 14, item 2), checked on the objects `helm template`
 * renders: pure functions over plain objects, so that they are unit-tested on objects made in memory and applied to
 * the real chart by helm-chart.int.test.ts.
 */

/** Manifests are free-form: the rules read them defensively. */
// biome-ignore lint/suspicious/noExplicitAny: the one place the free-form parts of a manifest are typed.
type Loose = any;

/** A rendered Kubernetes object, as far as the rules read it. */
export interface K8sObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Loose;
  [key: string]: Loose;
}

/** The processes the chart runs a Deployment and a Service for: the five backend services and the gateway. */
export const CHART_PROCESSES = [
  "gateway",
  "identity",
  "pipelines",
  "builds",
  "artifacts",
  "agents",
  "notifications",
] as const;

/** Parses a multi-document YAML stream (helm template's output), dropping empty documents; throws on bad YAML. */
export function parseManifests(text: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`invalid YAML: ${doc.errors[0]?.message}`);
    const value = doc.toJS() as unknown;
    if (value !== null && typeof value === "object") objects.push(value as K8sObject);
  }
  return objects;
}

/** "Kind/name", how violations name an object. */
export function objectId(obj: K8sObject): string {
  return `${obj.kind ?? "?"}/${obj.metadata?.name ?? "?"}`;
}

const WORKLOAD_KINDS = new Set(["Deployment", "StatefulSet", "DaemonSet", "Job"]);

/** The pod template of a workload (a CronJob's too), or undefined for other objects. */
export function podTemplate(
  obj: K8sObject,
): { metadata?: { labels?: Record<string, string> }; spec?: Loose } | undefined {
  if (obj.kind === "CronJob") return obj.spec?.jobTemplate?.spec?.template;
  return WORKLOAD_KINDS.has(obj.kind ?? "") ? obj.spec?.template : undefined;
}

/** Whether a label selector (matchLabels and matchExpressions) selects these labels; an empty selector selects all. */
export function selectorMatches(
  selector: { matchLabels?: Record<string, string>; matchExpressions?: Loose[] } | undefined,
  labels: Record<string, string> = {},
): boolean {
  if (selector === undefined || selector === null) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const expr of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, expr.key);
    const value = labels[expr.key];
    const values: string[] = expr.values ?? [];
    if (expr.operator === "In" && !(has && values.includes(value as string))) return false;
    if (expr.operator === "NotIn" && has && values.includes(value as string)) return false;
    if (expr.operator === "Exists" && !has) return false;
    if (expr.operator === "DoesNotExist" && has) return false;
  }
  return true;
}

/** The container-level rules: resources, and a restricted security context (alone or with the pod's). */
function containerViolations(where: string, container: Loose, podSecurity: Loose, needsProbes: boolean): string[] {
  const out: string[] = [];
  const at = `${where} container ${container?.name ?? "?"}`;
  const sc = container?.securityContext ?? {};
  const requests = container?.resources?.requests ?? {};
  const limits = container?.resources?.limits ?? {};
  if (requests.cpu === undefined || requests.memory === undefined)
    out.push(`${at}: resources.requests needs cpu and memory`);
  if (limits.memory === undefined) out.push(`${at}: resources.limits needs memory`);
  if (sc.allowPrivilegeEscalation !== false) out.push(`${at}: securityContext.allowPrivilegeEscalation must be false`);
  if (sc.privileged === true) out.push(`${at}: must not be privileged`);
  if (!(sc.capabilities?.drop ?? []).includes("ALL"))
    out.push(`${at}: securityContext.capabilities.drop must hold ALL`);
  if ((sc.capabilities?.add ?? []).length > 0) out.push(`${at}: must add no capabilities`);
  if (sc.readOnlyRootFilesystem !== true) out.push(`${at}: securityContext.readOnlyRootFilesystem must be true`);
  const nonRoot = sc.runAsNonRoot ?? podSecurity?.runAsNonRoot;
  if (nonRoot !== true) out.push(`${at}: runAsNonRoot must be true (container or pod)`);
  if ((sc.runAsUser ?? podSecurity?.runAsUser) === 0) out.push(`${at}: must not run as user 0`);
  const seccomp = sc.seccompProfile?.type ?? podSecurity?.seccompProfile?.type;
  if (seccomp !== "RuntimeDefault" && seccomp !== "Localhost") {
    out.push(`${at}: seccompProfile must be RuntimeDefault (container or pod)`);
  }
  if (needsProbes) {
    const ports = new Set<string | number>();
    for (const p of container?.ports ?? []) {
      ports.add(p.containerPort);
      if (p.name !== undefined) ports.add(p.name);
    }
    for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"]) {
      const spec = container?.[probe];
      if (spec === undefined || spec === null) {
        out.push(`${at}: needs a ${probe}`);
        continue;
      }
      const port = spec.httpGet?.port ?? spec.tcpSocket?.port ?? spec.grpc?.port;
      if (spec.exec === undefined && (port === undefined || !ports.has(port))) {
        out.push(`${at}: ${probe} checks port ${String(port)}, which the container does not declare`);
      }
    }
  }
  return out;
}

/**
 * Every rule of item 2 that can be read from the rendered objects; returns one line per violation (none: all kept).
 * - every container of every workload has resources (cpu and memory requests, a memory limit) and a restricted
 *   security context (non-root, no privilege escalation, capabilities drop ALL, seccomp RuntimeDefault, read-only
 *   root file system); every container of a long-running workload (not a Job) has startup, liveness and readiness
 *   probes on a port it declares;
 * - the gateway and each backend service have a Deployment and a Service selecting its pods; every Service but the
 *   gateway's is ClusterIP;
 * - every pod is selected by a NetworkPolicy that restricts both ingress and egress;
 * - every PodDisruptionBudget and HorizontalPodAutoscaler targets a workload of the release;
 * - an Ingress, if any, routes /v2 and /v3 to the gateway's Service.
 */
export function chartRuleViolations(objects: readonly K8sObject[]): string[] {
  const out: string[] = [];
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const workloads = objects.filter((o) => podTemplate(o) !== undefined);
  const policies = byKind("NetworkPolicy");
  const services = byKind("Service");

  for (const w of workloads) {
    const template = podTemplate(w);
    const pod = template?.spec ?? {};
    const labels = template?.metadata?.labels ?? {};
    const id = objectId(w);
    const longRunning = w.kind !== "Job" && w.kind !== "CronJob";
    const containers = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
    if ((pod.containers ?? []).length === 0) out.push(`${id}: has no containers`);
    for (const c of containers) {
      const isInit = (pod.initContainers ?? []).includes(c);
      out.push(...containerViolations(id, c, pod.securityContext, longRunning && !isInit));
    }
    if (pod.hostNetwork === true || pod.hostPID === true || pod.hostIPC === true)
      out.push(`${id}: uses host namespaces`);
    const selecting = policies.filter(
      (p) =>
        (p.metadata?.namespace ?? "") === (w.metadata?.namespace ?? "") && selectorMatches(p.spec?.podSelector, labels),
    );
    if (selecting.length === 0) out.push(`${id}: no NetworkPolicy selects its pods`);
    else {
      const types = new Set(selecting.flatMap((p) => p.spec?.policyTypes ?? []));
      if (!types.has("Ingress") || !types.has("Egress")) {
        out.push(`${id}: the NetworkPolicies selecting its pods must restrict both Ingress and Egress`);
      }
    }
  }

  const gatewayServices: K8sObject[] = [];
  for (const name of CHART_PROCESSES) {
    const deployment = byKind("Deployment").find((d) => d.metadata?.labels?.["app.kubernetes.io/component"] === name);
    if (deployment === undefined) {
      out.push(`${name}: no Deployment`);
      continue;
    }
    const labels = podTemplate(deployment)?.metadata?.labels ?? {};
    const service = services.find(
      (s) => s.spec?.selector !== undefined && selectorMatches({ matchLabels: s.spec.selector }, labels),
    );
    if (service === undefined) out.push(`${name}: no Service selects the pods of ${objectId(deployment)}`);
    else if (name === "gateway") gatewayServices.push(service);
  }
  for (const s of services) {
    if (gatewayServices.includes(s)) continue;
    const type = s.spec?.type ?? "ClusterIP";
    if (type !== "ClusterIP") out.push(`${objectId(s)}: must be ClusterIP, is ${type}`);
  }

  for (const pdb of byKind("PodDisruptionBudget")) {
    const matched = workloads.some((w) => selectorMatches(pdb.spec?.selector, podTemplate(w)?.metadata?.labels));
    if (!matched) out.push(`${objectId(pdb)}: selects no pods of the release`);
    if ((pdb.spec?.minAvailable === undefined) === (pdb.spec?.maxUnavailable === undefined)) {
      out.push(`${objectId(pdb)}: needs exactly one of minAvailable and maxUnavailable`);
    }
  }
  for (const hpa of byKind("HorizontalPodAutoscaler")) {
    const ref = hpa.spec?.scaleTargetRef ?? {};
    const target = workloads.find((w) => w.kind === ref.kind && w.metadata?.name === ref.name);
    if (target === undefined) out.push(`${objectId(hpa)}: targets ${ref.kind}/${ref.name}, which is not rendered`);
    else if (target.spec?.replicas !== undefined) {
      out.push(`${objectId(hpa)}: ${objectId(target)} sets replicas, which would fight the autoscaler`);
    }
  }

  const gatewayNames = new Set(gatewayServices.map((s) => s.metadata?.name));
  for (const ingress of byKind("Ingress")) {
    const paths = (ingress.spec?.rules ?? []).flatMap((r: Loose) => r?.http?.paths ?? []);
    for (const want of ["/v2", "/v3"]) {
      const path = paths.find((p: Loose) => p.path === want);
      if (path === undefined) out.push(`${objectId(ingress)}: no path ${want}`);
      else if (!gatewayNames.has(path.backend?.service?.name)) {
        out.push(`${objectId(ingress)}: ${want} goes to ${path.backend?.service?.name}, not the gateway's Service`);
      }
    }
  }
  return out;
}
