import { AUTHENTICATION_REQUIRED, type Operation, REST_KINDS, type RestKind } from "./access-matrix-routes.js";
import type { World } from "./access-matrix-world.js";

// The cases of the generated access matrix: for each /v2 operation of the served OpenAPI document and each kind of
// refusal, either the requests that must be refused (with the status and message they must get) or a reason the kind
// does not apply to the operation. Path parameters come from the fixture world (access-matrix-world.ts).

export interface Expectation {
  status: number;
  /** The exact `message`; undefined checks only that it is a string. */
  message?: string;
}

export interface Case {
  kind: RestKind | "control" | "agent-credential" | "agent-job";
  operationId: string;
  method: string;
  path: string;
  /** The whole Authorization header, or none. */
  authorization?: string;
  body?: unknown;
  expect: Expectation;
  /** What the case varies, for failure messages. */
  note: string;
}

export interface NotApplicable {
  operationId: string;
  kind: RestKind;
  reason: string;
}

const fill = (template: string, values: Record<string, string>) =>
  template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for {${name}} in ${template}`);
    return encodeURIComponent(value);
  });

const paramsOf = (template: string) => [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);

const isTeamRoute = (template: string) => template.includes("/teams/{team}");
const isScheduleRoute = (template: string) => template.includes("/schedules/{id}");
const isSourceProviderRoute = (template: string) => template.includes("/source_providers/{id}");
const isWebhookRoute = (template: string) => template.includes("/webhooks/{id}");
const isClusterRoute = (template: string) => template.includes("/clusters/{cluster}");
const isPipelineRoute = (template: string) =>
  /^\/v2\/organizations\/\{org\}\/pipelines\/\{(pipeline|slug)\}/.test(template);

/** The owner's values for every path parameter: each names a real resource of organization A. */
function ownValues(world: World, template: string): Record<string, string> {
  const { a } = world;
  const team = isTeamRoute(template);
  return {
    org: a.slug,
    pipeline: team ? a.pipeline.id : a.pipeline.slug,
    slug: a.pipeline.slug,
    number: String(a.build.number),
    job: a.build.jobId,
    id: isScheduleRoute(template)
      ? a.scheduleId
      : isSourceProviderRoute(template)
        ? a.sourceProviderId
        : isWebhookRoute(template)
          ? a.webhookId
          : a.build.artifactId,
    team: a.teamId,
    user: team ? world.plain.id : a.adminId,
    suite: a.suiteId,
    rule: a.ruleId,
    registry: a.registrySlug,
    token: isClusterRoute(template) ? a.clusterTokenId : a.registryTokenId,
    cluster: a.clusterId,
    queue: a.queueId,
    maintainer: a.maintainerId,
    secret: a.secretId,
    agent: a.agentId,
    annotation: a.build.annotationId,
  };
}

/** For each parameter below the organization: a value naming a real resource under another parent, and its 404. */
function misplacedValues(
  world: World,
  template: string,
): Record<string, { value: string; message: string; what: string }> {
  const { b, q } = world;
  const team = isTeamRoute(template);
  const pipeline = team
    ? { value: q.id, message: "No team pipeline found", what: "a pipeline of the organization not in the team" }
    : { value: b.pipeline.slug, message: "No pipeline found", what: "another organization's pipeline" };
  return {
    pipeline,
    slug: pipeline,
    number: { value: String(q.build.number), message: "No build found", what: "another pipeline's build number" },
    job: { value: q.build.jobId, message: "No job found", what: "another build's job" },
    id: isScheduleRoute(template)
      ? { value: q.scheduleId, message: "No pipeline schedule found", what: "another pipeline's schedule" }
      : isSourceProviderRoute(template)
        ? {
            value: b.sourceProviderId,
            message: "No source provider found",
            what: "another organization's source provider",
          }
        : isWebhookRoute(template)
          ? { value: world.b.webhookId, message: "No webhook found", what: "another organization's webhook" }
          : { value: q.build.artifactId, message: "No artifact found", what: "another job's artifact" },
    team: { value: b.teamId, message: "No team found", what: "another organization's team" },
    user: team
      ? { value: world.outsider.id, message: "No team member found", what: "an organization member not in the team" }
      : { value: b.adminId, message: "No user found", what: "another organization's user" },
    suite: { value: world.looseSuiteId, message: "No team suite found", what: "a suite not in the team" },
    rule: { value: b.ruleId, message: "No rule found", what: "another organization's rule" },
    registry: { value: b.registrySlug, message: "No registry found", what: "another organization's registry" },
    token: isClusterRoute(template)
      ? { value: b.clusterTokenId, message: "No token found", what: "another organization's cluster token" }
      : { value: world.otherRegistryTokenId, message: "No token found", what: "another registry's token" },
    cluster: { value: b.clusterId, message: "No cluster found", what: "another organization's cluster" },
    queue: { value: b.queueId, message: "No queue found", what: "another organization's cluster queue" },
    maintainer: { value: b.maintainerId, message: "No maintainer found", what: "another cluster's maintainer" },
    secret: { value: b.secretId, message: "No secret found", what: "another organization's cluster secret" },
    agent: { value: b.agentId, message: "No agent found", what: "another organization's agent" },
    annotation: { value: q.build.annotationId, message: "No annotation found", what: "another build's annotation" },
  };
}

/** Request bodies that would be valid for the owner, so that only authorization can refuse them. */
function bodyOf(world: World, operationId: string): unknown {
  const { a, q } = world;
  const bodies: Record<string, unknown> = {
    createPipeline: {
      name: "Access Matrix Refused",
      repository: "git@github.com:acme/matrix.git",
      cluster_id: a.clusterId,
      configuration: "steps:\n  - command: make\n",
      teams: { [a.teamId]: "manage_build_and_read" },
    },
    updatePipeline: { description: "changed by a refused request" },
    createBuild: { commit: "HEAD", branch: "main", message: "refused" },
    createPipelineSchedule: { label: "Refused", cronline: "@daily" },
    createSourceProvider: { kind: "github", token: "refused-token" },
    createNotificationWebhook: { webhook_url: "https://refused.example/hook", events: ["ping"] },
    updateNotificationWebhook: { description: "changed by a refused request" },
    updatePipelineSchedule: { label: "changed by a refused request" },
    addTeamMember: { user_id: world.outsider.id, role: "member" },
    updateTeamMember: { role: "maintainer" },
    addTeamPipeline: { pipeline_id: q.id, access_level: "read_only" },
    updateTeamPipeline: { access_level: "manage_build_and_read" },
    removeTeamPipelineNamedInBody: { pipeline_id: a.pipeline.id },
    addTeamSuite: { suite_id: world.looseSuiteId, access_level: ["read"] },
    updateTeamSuite: { access_level: ["read", "edit"] },
    createRule: {
      type: "pipeline.trigger_build.pipeline",
      value: { source_pipeline: q.id, target_pipeline: a.pipeline.id },
    },
    createRegistryToken: { description: "refused" },
    updateRegistryToken: { description: "changed by a refused request" },
    pauseAgent: { note: "refused", timeout_in_minutes: 5 },
    createAnnotation: { body: "refused", context: "refused" },
    createAnnotationForJob: { body: "refused", context: "refused" },
    reprioritizeJob: { priority: 7 },
    createTeam: { name: "Access Matrix Refused Team" },
    createCluster: { name: "Access Matrix Refused Cluster" },
    updateCluster: { description: "changed by a refused request" },
    createClusterToken: { description: "refused" },
    updateClusterToken: { description: "changed by a refused request" },
    updateClusterTokenPut: { description: "changed by a refused request" },
    createClusterQueue: { key: "refused" },
    updateClusterQueue: { description: "changed by a refused request" },
    pauseClusterQueueDispatch: { dispatch_paused_note: "refused" },
    createClusterMaintainer: { user: world.a.adminId },
    createClusterSecret: { key: "REFUSED_SECRET", value: "refused-value" },
    updateClusterSecret: { description: "changed by a refused request" },
    updateClusterSecretValue: { value: "changed-by-a-refused-request" },
    updateTeam: { description: "changed by a refused request" },
    stopAgent: { force: false },
  };
  // The spellings of one operation (…Slash, …Plural) take its body.
  const base = operationId.replace(/(PluralSlash|Slash|Plural)$/, "");
  return bodies[operationId] ?? bodies[base];
}

/** Who may be refused what by the access policy (teams, admin-only settings), as access.e2e and teams.e2e check. */
interface MemberCase {
  who: string;
  secret: string;
  expect: Expectation;
  /** Path parameters other than the owner's, for this member. */
  values?: Record<string, string>;
}

function memberExpectations(world: World, op: Operation): MemberCase[] {
  const write = op.method !== "GET";
  const forbidden = { status: 403, message: "Forbidden" };
  const outsider = { who: "outsider member (no team)", secret: world.outsider.secret };
  const plain = { who: "plain member of the team (read_only on the pipeline)", secret: world.plain.secret };
  if (isPipelineRoute(op.path)) {
    const hidden = { ...outsider, expect: { status: 404, message: "No pipeline found" } };
    return write ? [hidden, { ...plain, expect: forbidden }] : [hidden];
  }
  if (isTeamRoute(op.path)) {
    const hidden = { ...outsider, expect: { status: 404, message: "No team found" } };
    // A visible team is shown to every member of the organization, but only its maintainers and admins change it.
    const visible = {
      who: "outsider member on a visible team",
      secret: world.outsider.secret,
      expect: forbidden,
      values: { team: world.visibleTeamId },
    };
    return write ? [hidden, { ...plain, expect: forbidden }, visible] : [hidden];
  }
  // A cluster's secrets are its administrators' and maintainers' alone, to read as to change.
  if (/\/clusters\/\{cluster\}\/secrets/.test(op.path)) return [{ ...outsider, expect: forbidden }];
  // Source-provider connections are the organization's administrators' alone, to read as to change.
  if (/\/source_providers(\/|$)/.test(op.path)) return [{ ...outsider, expect: forbidden }];
  // Teams are created by administrators only (identity's access policy).
  const adminOnly = /\/(rules|registries|agents|clusters)(\/|$)/.test(op.path) || /\/teams$/.test(op.path);
  return write && adminOnly ? [{ ...outsider, expect: forbidden }] : [];
}

/** Why a kind does not apply to an operation, or undefined when it does. */
function notApplicable(op: Operation, kind: RestKind): string | undefined {
  const params = paramsOf(op.path);
  if (op.public) return "public: the OpenAPI document is served without a token";
  if (kind === "scope" && op.scope === null) return "x-scope null: any valid token may call it";
  if (kind === "foreign" && !params.includes("org"))
    return "names no organization: it answers for the token's own organizations";
  if (kind === "parent" && params.filter((p) => p !== "org").length === 0)
    return "no path parameter below the organization to misplace";
  if (kind === "member" && !params.includes("org")) return "names no organization: every member answers for themselves";
  return undefined;
}

/** Why no member case runs for an operation under an organization: the policy refuses no member. */
function unrefusedReason(op: Operation): string {
  if (op.operationId === "createPipeline")
    return "the policy answers a member who gives no team 422 (teams required), as access.e2e checks; one who gives their own team may create";
  return "the access policy lets every member of the organization do it (lists are filtered by access)";
}

/** The requests of one kind for one operation. */
function casesOf(world: World, op: Operation, kind: RestKind): Case[] {
  const own = ownValues(world, op.path);
  const path = () => fill(op.path, own);
  const body =
    op.method === "GET" ? undefined : (bodyOf(world, op.operationId) ?? (op.method === "DELETE" ? undefined : {}));
  const base = { kind, operationId: op.operationId, method: op.method, body };
  const unauthenticated = { status: 401, message: AUTHENTICATION_REQUIRED };
  switch (kind) {
    case "unauthenticated": {
      const head = { ...base, method: "HEAD", path: path(), expect: { status: 401 }, note: "HEAD, no Authorization" };
      return [
        ...(op.method === "GET" ? [head] : []),
        { ...base, path: path(), expect: unauthenticated, note: "no Authorization header" },
        { ...base, path: path(), authorization: "Bearer bkua_unknown", expect: unauthenticated, note: "unknown token" },
      ];
    }
    case "scope": {
      const scope = op.scope as string;
      const secret = world.lacking[scope];
      if (!secret) throw new Error(`no token lacking ${scope}`);
      const message = `Your access token doesn't have the ${scope} scope`;
      return [
        {
          ...base,
          path: path(),
          authorization: `Bearer ${secret}`,
          expect: { status: 403, message },
          note: `owner's token without ${scope}`,
        },
      ];
    }
    case "foreign": {
      const expect = { status: 404, message: "No organization found" };
      return [
        { secret: world.b.adminSecret, note: "another organization's admin, every scope" },
        { secret: world.limitedToB, note: "the owner's own token limited to another organization" },
      ].map((t) => ({ ...base, path: path(), authorization: `Bearer ${t.secret}`, expect, note: t.note }));
    }
    case "parent": {
      const misplaced = misplacedValues(world, op.path);
      return paramsOf(op.path)
        .filter((p) => p !== "org")
        .map((param) => {
          const m = misplaced[param];
          if (!m) throw new Error(`no misplaced value for {${param}} in ${op.path}`);
          return {
            ...base,
            path: fill(op.path, { ...own, [param]: m.value }),
            authorization: `Bearer ${world.a.adminSecret}`,
            expect: { status: 404, message: m.message },
            note: `{${param}} = ${m.what}`,
          };
        });
    }
    case "member":
      return memberExpectations(world, op).flatMap((m) => {
        const auth = { ...base, authorization: `Bearer ${m.secret}`, expect: m.expect };
        const asIs = { ...auth, path: fill(op.path, { ...own, ...m.values }), note: m.who };
        if (m.expect.status !== 404) return [asIs];
        // Where the resource is hidden, what lies below it must not show either: the same 404 for misplaced ones.
        const misplaced = misplacedValues(world, op.path);
        const below = paramsOf(op.path).filter((p) => p !== "org" && misplaced[p]);
        return [
          asIs,
          ...below.map((param) => ({
            ...auth,
            path: fill(op.path, { ...own, [param]: misplaced[param]?.value ?? "" }),
            note: `${m.who}, {${param}} = ${misplaced[param]?.what}`,
          })),
        ];
      });
  }
}

/** For an operation that also takes its token as `?access_token=`: each case again with the token there. */
function withQueryTokens(op: Operation, cases: Case[]): Case[] {
  if (!op.queryToken) return cases;
  const moved = cases
    .filter((c) => c.authorization?.startsWith("Bearer "))
    .map((c) => ({
      ...c,
      path: `${c.path}?access_token=${encodeURIComponent((c.authorization as string).slice("Bearer ".length))}`,
      authorization: undefined,
      note: `${c.note}, token in ?access_token=`,
    }));
  return [...cases, ...moved];
}

/** Every case of the REST matrix and every kind that does not apply, with its reason. */
export function restMatrix(world: World, ops: Operation[]) {
  const cases: Case[] = [];
  const skipped: NotApplicable[] = [];
  for (const op of ops) {
    for (const kind of REST_KINDS) {
      const reason = notApplicable(op, kind);
      const made = reason ? [] : withQueryTokens(op, casesOf(world, op, kind));
      if (made.length === 0) {
        skipped.push({ operationId: op.operationId, kind, reason: reason ?? unrefusedReason(op) });
      } else cases.push(...made);
    }
  }
  return { cases, skipped };
}

/** The owner's reads of every GET operation: each fixture path names something real (else a 404 proves nothing). */
export function controls(world: World, ops: Operation[]): Case[] {
  return ops
    .filter((op) => op.method === "GET" && !op.public)
    .map((op) => ({
      kind: "control" as const,
      operationId: op.operationId,
      method: "GET",
      path: fill(op.path, ownValues(world, op.path)),
      authorization: `Bearer ${world.a.adminSecret}`,
      expect: { status: op.operationId === "downloadArtifact" ? 302 : 200 },
      note: "the owner, every scope",
    }));
}

export { fill, paramsOf };
