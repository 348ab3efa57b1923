import {
  CHART_PROCESSES,
  chartRuleViolations,
  type K8sObject,
  parseManifests,
  podTemplate,
  selectorMatches,
} from "./helm-rules.js";

const selector = (component: string) => ({
  "app.kubernetes.io/instance": "rel",
  "app.kubernetes.io/component": component,
});

function container(name: string) {
  return {
    name,
    ports: [{ name: "http", containerPort: 8080 }],
    startupProbe: { httpGet: { path: "/healthz", port: "http" } },
    livenessProbe: { httpGet: { path: "/healthz", port: "http" } },
    readinessProbe: { httpGet: { path: "/readyz", port: 8080 } },
    resources: { requests: { cpu: "100m", memory: "128Mi" }, limits: { memory: "512Mi" } },
    securityContext: {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    },
  };
}

const podSecurity = { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: "RuntimeDefault" } };

function deployment(component: string): K8sObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: `rel-${component}`, labels: selector(component) },
    spec: {
      replicas: 1,
      selector: { matchLabels: selector(component) },
      template: {
        metadata: { labels: selector(component) },
        spec: { securityContext: podSecurity, containers: [container(component)] },
      },
    },
  };
}

function service(component: string, type?: string): K8sObject {
  return {
    kind: "Service",
    metadata: { name: `rel-${component}` },
    spec: { ...(type ? { type } : {}), selector: selector(component), ports: [{ port: 80 }] },
  };
}

/** A release that keeps every rule: six Deployments and Services, one NetworkPolicy for all pods, an Ingress. */
function goodRelease(): K8sObject[] {
  return [
    ...CHART_PROCESSES.flatMap((c) => [deployment(c), service(c, c === "gateway" ? "LoadBalancer" : undefined)]),
    {
      kind: "NetworkPolicy",
      metadata: { name: "all" },
      spec: {
        podSelector: { matchLabels: { "app.kubernetes.io/instance": "rel" } },
        policyTypes: ["Ingress", "Egress"],
      },
    },
    {
      kind: "Ingress",
      metadata: { name: "rel" },
      spec: {
        rules: [
          {
            http: {
              paths: ["/v2", "/v3"].map((path) => ({ path, backend: { service: { name: "rel-gateway" } } })),
            },
          },
        ],
      },
    },
  ];
}

describe("parseManifests", () => {
  it("reads every document of helm template's output and drops empty ones", () => {
    const objects = parseManifests("---\n# Source: x\nkind: A\nmetadata:\n  name: a\n---\n---\nkind: B\n");
    expect(objects.map((o) => o.kind)).toEqual(["A", "B"]);
  });

  it("throws on invalid YAML", () => {
    expect(() => parseManifests("kind: A\n  bad: [\n")).toThrow(/invalid YAML/);
  });
});

describe("selectorMatches", () => {
  it("requires every matchLabels pair and honours matchExpressions", () => {
    const labels = { a: "1", b: "2" };
    expect(selectorMatches({ matchLabels: { a: "1" } }, labels)).toBe(true);
    expect(selectorMatches({ matchLabels: { a: "2" } }, labels)).toBe(false);
    expect(selectorMatches({}, labels)).toBe(true);
    expect(selectorMatches(undefined, labels)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: "b", operator: "In", values: ["2", "3"] }] }, labels)).toBe(
      true,
    );
    expect(selectorMatches({ matchExpressions: [{ key: "c", operator: "Exists" }] }, labels)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: "a", operator: "NotIn", values: ["1"] }] }, labels)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: "c", operator: "DoesNotExist" }] }, labels)).toBe(true);
  });
});

describe("podTemplate", () => {
  it("finds the pod template of workloads and CronJobs only", () => {
    expect(podTemplate(deployment("builds"))?.metadata?.labels).toEqual(selector("builds"));
    expect(podTemplate({ kind: "CronJob", spec: { jobTemplate: { spec: { template: { spec: {} } } } } })).toEqual({
      spec: {},
    });
    expect(podTemplate(service("builds"))).toBeUndefined();
  });
});

describe("chartRuleViolations", () => {
  it("finds nothing wrong with a release that keeps every rule", () => {
    expect(chartRuleViolations(goodRelease())).toEqual([]);
  });

  it("requires the three probes on a declared port of long-running containers, not of Jobs", () => {
    const objects = goodRelease();
    const c = podTemplate(objects[0] as K8sObject)?.spec.containers[0];
    delete c.livenessProbe;
    c.readinessProbe.httpGet.port = "health";
    const job: K8sObject = {
      kind: "Job",
      metadata: { name: "bootstrap" },
      spec: {
        template: {
          metadata: { labels: { "app.kubernetes.io/instance": "rel" } },
          spec: { securityContext: podSecurity, containers: [{ ...container("bootstrap"), startupProbe: undefined }] },
        },
      },
    };
    delete job.spec.template.spec.containers[0].livenessProbe;
    expect(chartRuleViolations([...objects, job])).toEqual([
      "Deployment/rel-gateway container gateway: needs a livenessProbe",
      "Deployment/rel-gateway container gateway: readinessProbe checks port health, which the container does not declare",
    ]);
  });

  it("requires resources and the restricted security context, from the container or the pod", () => {
    const objects = goodRelease();
    const pod = podTemplate(objects[2] as K8sObject)?.spec;
    pod.securityContext = {};
    pod.containers[0].securityContext = { capabilities: { add: ["NET_ADMIN"] }, privileged: true };
    pod.containers[0].resources = { requests: { cpu: "1" } };
    expect(chartRuleViolations(objects)).toEqual([
      "Deployment/rel-identity container identity: resources.requests needs cpu and memory",
      "Deployment/rel-identity container identity: resources.limits needs memory",
      "Deployment/rel-identity container identity: securityContext.allowPrivilegeEscalation must be false",
      "Deployment/rel-identity container identity: must not be privileged",
      "Deployment/rel-identity container identity: securityContext.capabilities.drop must hold ALL",
      "Deployment/rel-identity container identity: must add no capabilities",
      "Deployment/rel-identity container identity: securityContext.readOnlyRootFilesystem must be true",
      "Deployment/rel-identity container identity: runAsNonRoot must be true (container or pod)",
      "Deployment/rel-identity container identity: seccompProfile must be RuntimeDefault (container or pod)",
    ]);
  });

  it("requires every backend Service to be ClusterIP, and a Deployment and Service per process", () => {
    const objects = goodRelease().filter((o) => !(o.kind === "Service" && o.metadata?.name === "rel-agents"));
    objects.push(service("builds-public", "NodePort"));
    const withoutArtifacts = objects.filter((o) => o.metadata?.name !== "rel-artifacts" || o.kind !== "Deployment");
    expect(chartRuleViolations(withoutArtifacts)).toEqual([
      "artifacts: no Deployment",
      "agents: no Service selects the pods of Deployment/rel-agents",
      "Service/rel-builds-public: must be ClusterIP, is NodePort",
    ]);
  });

  it("requires a NetworkPolicy restricting ingress and egress for every pod", () => {
    const objects = goodRelease();
    const policy = objects.find((o) => o.kind === "NetworkPolicy") as K8sObject;
    policy.spec.podSelector = { matchLabels: { "app.kubernetes.io/component": "gateway" } };
    policy.spec.policyTypes = ["Ingress"];
    const violations = chartRuleViolations(objects);
    expect(violations).toContain(
      "Deployment/rel-gateway: the NetworkPolicies selecting its pods must restrict both Ingress and Egress",
    );
    expect(violations).toContain("Deployment/rel-builds: no NetworkPolicy selects its pods");
    expect(violations).toHaveLength(7);
  });

  it("checks PodDisruptionBudgets, autoscalers and the Ingress paths", () => {
    const objects = goodRelease();
    objects.push(
      { kind: "PodDisruptionBudget", metadata: { name: "a" }, spec: { selector: { matchLabels: { x: "y" } } } },
      {
        kind: "HorizontalPodAutoscaler",
        metadata: { name: "b" },
        spec: { scaleTargetRef: { kind: "Deployment", name: "rel-builds" } },
      },
      {
        kind: "HorizontalPodAutoscaler",
        metadata: { name: "c" },
        spec: { scaleTargetRef: { kind: "Deployment", name: "rel-nothing" } },
      },
    );
    const ingress = objects.find((o) => o.kind === "Ingress") as K8sObject;
    ingress.spec.rules[0].http.paths[1].backend.service.name = "rel-builds";
    ingress.spec.rules[0].http.paths.shift();
    expect(chartRuleViolations(objects)).toEqual([
      "PodDisruptionBudget/a: selects no pods of the release",
      "PodDisruptionBudget/a: needs exactly one of minAvailable and maxUnavailable",
      "HorizontalPodAutoscaler/b: Deployment/rel-builds sets replicas, which would fight the autoscaler",
      "HorizontalPodAutoscaler/c: targets Deployment/rel-nothing, which is not rendered",
      "Ingress/rel: no path /v2",
      "Ingress/rel: /v3 goes to rel-builds, not the gateway's Service",
    ]);
  });
});
