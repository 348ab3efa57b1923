import { createHash, randomBytes } from "node:crypto";
import { ArtifactsService } from "@conveyor/proto/artifacts";
import { Role, TeamPrivacy } from "@conveyor/proto/identity";
import { createServiceClient, ALL_SCOPES as RUNTIME_SCOPES } from "@conveyor/runtime";
import { agents, arrangeCluster, arrangeMember, arrangeOrgUser, identity, send, stack, unique } from "./stack-env.js";
import { arrangeTeam, arrangeTeamMember, registries, teams } from "./teams-env.js";

// The fixture world of the generated access matrix: two organizations, each with what every /v2 route names by a
// path parameter, and the callers the matrix sends: the owner (an admin of A with every scope), one token per scope
// lacking only that scope, B's admin (every scope, no access to A), an outsider member of A (every scope, no team)
// and a plain member of A's secret team T (read_only on pipeline P). Pipeline P has exactly one build, so build 2
// under P names another pipeline's build (Q's).

/** Every scope a token can hold: the run's tokens lack one of them each. */
export const ALL_SCOPES: string[] = [...RUNTIME_SCOPES];

const artifactsClient = createServiceClient(ArtifactsService, process.env.ARTIFACTS_URL ?? "");

export interface Pipe {
  id: string;
  slug: string;
}
export interface BuildRef {
  id: string;
  number: number;
  jobId: string;
  artifactId: string;
  /** A job-scoped annotation of its job, made over REST. */
  annotationId: string;
}

/** One organization's resources, as path parameter values. */
export interface OrgWorld {
  id: string;
  slug: string;
  adminId: string;
  adminSecret: string;
  clusterId: string;
  pipeline: Pipe;
  build: BuildRef;
  /** A schedule of the pipeline. */
  scheduleId: string;
  teamId: string;
  suiteId: string;
  ruleId: string;
  registrySlug: string;
  registryTokenId: string;
  agentId: string;
  agentSecret: string;
  registrationSecret: string;
  /** The agent's registration token, a token of the organization's cluster. */
  clusterTokenId: string;
  /** A source-provider connection of the organization (docs/statuses.md#connections). */
  sourceProviderId: string;
  /** A notification webhook of the organization (docs/notifications.md#organization-webhooks). */
  webhookId: string;
  /** The cluster's queue "default" (the agent's). */
  queueId: string;
  /** The cluster's maintainer: its administrator. */
  maintainerId: string;
  /** A secret of the cluster (docs/security.md#cluster-secrets). */
  secretId: string;
}

export interface World {
  a: OrgWorld;
  b: OrgWorld;
  /** A's second pipeline, with builds 1 and 2 and a schedule; its build 2 has a job and an artifact. */
  q: Pipe & { build: BuildRef; scheduleId: string };
  /** A visible team of A with no members: shown to every member, changed by none. */
  visibleTeamId: string;
  /** A suite of A that no team has. */
  looseSuiteId: string;
  /** A token of A's second registry (another registry's token). */
  otherRegistryTokenId: string;
  /** Secrets of A's admin lacking exactly one scope, by that scope. */
  lacking: Record<string, string>;
  outsider: { id: string; secret: string };
  plain: { id: string; secret: string };
  /** A's admin, also a member of B, with every scope but limited to organization B. */
  limitedToB: string;
}

/** Creates a pipeline over REST, in the organization's cluster, and returns it. */
async function arrangePipeline(org: { slug: string; secret: string; clusterId: string }): Promise<Pipe> {
  const res = await send("POST", `/v2/organizations/${org.slug}/pipelines`, org.secret, {
    name: unique("Matrix"),
    repository: "git@github.com:acme/matrix.git",
    cluster_id: org.clusterId,
    configuration: "steps:\n  - command: make test\n",
  });
  if (res.status !== 201) throw new Error(`pipeline: ${res.status} ${res.text}`);
  return { id: res.body.id, slug: res.body.slug };
}

/** Creates a build over REST; with `artifact`, gives its job an uploaded artifact. */
async function arrangeBuild(org: { id: string; slug: string; secret: string }, p: Pipe): Promise<BuildRef> {
  const res = await send("POST", `/v2/organizations/${org.slug}/pipelines/${p.slug}/builds`, org.secret, {
    commit: "HEAD",
    branch: "main",
    message: "access matrix",
  });
  if (res.status !== 201) throw new Error(`build: ${res.status} ${res.text}`);
  const build = { id: res.body.id as string, number: res.body.number as number, jobId: res.body.jobs[0].id as string };
  const annotated = await send(
    "POST",
    `/v2/organizations/${org.slug}/pipelines/${p.slug}/builds/${build.number}/jobs/${build.jobId}/annotations`,
    org.secret,
    { body: "access matrix", context: "matrix" },
  );
  if (annotated.status !== 201) throw new Error(`annotation: ${annotated.status} ${annotated.text}`);
  const annotationId = annotated.body.id as string;
  return { ...build, annotationId, artifactId: await arrangeArtifact(org.id, p.id, build) };
}

/** An artifact of the job, uploaded to the store through its signed form and reported finished. */
async function arrangeArtifact(
  organizationId: string,
  pipelineId: string,
  build: Omit<BuildRef, "artifactId" | "annotationId">,
) {
  const content = Buffer.from(`matrix ${build.id}\n`);
  const { artifacts, uploads } = await artifactsClient.createArtifactBatch({
    organizationId,
    pipelineId,
    buildId: build.id,
    buildNumber: build.number,
    jobId: build.jobId,
    batchId: crypto.randomUUID(),
    artifacts: [
      {
        path: "out/matrix.txt",
        fileSize: BigInt(content.length),
        sha1sum: createHash("sha1").update(content).digest("hex"),
        sha256sum: createHash("sha256").update(content).digest("hex"),
        contentType: "text/plain",
        globPath: "out/*",
      },
    ],
  });
  const [artifact, upload] = [artifacts[0], uploads[0]];
  if (!artifact || !upload) throw new Error("artifact arrangement failed");
  const form = new FormData();
  for (const [k, v] of Object.entries(upload.fields)) form.append(k, v);
  form.append(upload.fileField || "file", new Blob([content]), "matrix.txt");
  const put = await fetch(upload.url, { method: "POST", body: form });
  if (!put.ok) throw new Error(`artifact upload: ${put.status} ${await put.text()}`);
  await artifactsClient.updateArtifactStates({ jobId: build.jobId, updates: [{ id: artifact.id, state: "finished" }] });
  return artifact.id;
}

/** Registers an agent with a new registration token of the cluster, over the agent API, as buildkite-agent does. */
async function arrangeAgent(organizationId: string, clusterId: string) {
  const created = await agents.createAgentToken({ organizationId, clusterId, description: "access matrix" });
  const res = await fetch(`${stack.agentUrl}/register`, {
    method: "POST",
    headers: { authorization: `Token ${created.secret}`, "content-type": "application/json" },
    body: JSON.stringify({ name: unique("matrix-agent"), hostname: "matrix", version: "3.137.0" }),
  });
  const body = (await res.json()) as { id: string; access_token: string };
  if (res.status !== 200) throw new Error(`agent register: ${res.status} ${JSON.stringify(body)}`);
  return {
    agentId: body.id,
    agentSecret: body.access_token,
    registrationSecret: created.secret,
    clusterTokenId: created.token?.id ?? "",
  };
}

/** The cluster's queue "default" (made after its agent registered: its queue) and its administrator as maintainer. */
async function arrangeQueueAndMaintainer(organizationId: string, clusterId: string, userId: string) {
  const { queue } = await agents.createClusterQueue({ organizationId, clusterId, key: "default" });
  const { maintainer } = await agents.addClusterMaintainer({ organizationId, clusterId, userId });
  return { queueId: queue?.id ?? "", maintainerId: maintainer?.id ?? "" };
}

async function arrangeRegistryToken(slug: string, secret: string, organizationId: string) {
  const { registry } = await registries.createRegistry({ organization: organizationId, name: unique("Registry") });
  const path = `/v2/packages/organizations/${slug}/registries/${registry?.slug}/tokens`;
  const res = await send("POST", path, secret, { description: "matrix" });
  if (res.status !== 200) throw new Error(`registry token: ${res.status} ${res.text}`);
  return { registrySlug: registry?.slug ?? "", registryTokenId: res.body.id as string };
}

/** A source-provider connection of the organization, over REST; returns its id. */
async function arrangeSourceProvider(org: { slug: string; secret: string }): Promise<string> {
  const res = await send("POST", `/v2/organizations/${org.slug}/source_providers`, org.secret, {
    kind: "github",
    token: "access-matrix-token",
  });
  if (res.status !== 201) throw new Error(`source provider: ${res.status} ${res.text}`);
  return res.body.id;
}

/** A notification webhook of the organization (to an address that is refused: nothing is sent), over REST. */
async function arrangeWebhook(org: { slug: string; secret: string }): Promise<string> {
  const res = await send("POST", `/v2/organizations/${org.slug}/webhooks`, org.secret, {
    webhook_url: "http://169.254.169.254/access-matrix",
    events: ["build.finished"],
  });
  if (res.status !== 201) throw new Error(`webhook: ${res.status} ${res.text}`);
  return res.body.id;
}

/** A secret of the cluster, over REST (its value of the shape the log scan looks for); returns its id. */
async function arrangeClusterSecret(org: { slug: string; secret: string }, clusterId: string): Promise<string> {
  const res = await send("POST", `/v2/organizations/${org.slug}/clusters/${clusterId}/secrets`, org.secret, {
    key: "MATRIX_SECRET",
    value: `cvsv_${randomBytes(20).toString("hex")}`,
  });
  if (res.status !== 201) throw new Error(`cluster secret: ${res.status} ${res.text}`);
  return res.body.id;
}

/** A schedule of a pipeline that never builds during a run (once a year); returns its id. */
async function arrangeSchedule(org: { slug: string; secret: string }, p: Pipe): Promise<string> {
  const path = `/v2/organizations/${org.slug}/pipelines/${p.slug}/schedules`;
  const res = await send("POST", path, org.secret, { label: "Matrix", cronline: "@yearly" });
  if (res.status !== 201) throw new Error(`schedule: ${res.status} ${res.text}`);
  return res.body.id;
}

/** One organization (teams enabled) with one of everything; its team has its pipeline and its suite. */
async function arrangeOrg(privacy: TeamPrivacy): Promise<OrgWorld> {
  const owner = await arrangeOrgUser({ scopes: ALL_SCOPES, role: Role.ADMIN, teamsEnabled: true });
  const org = { id: owner.organization.id, slug: owner.organization.slug, secret: owner.secret };
  const clusterId = await arrangeCluster(org.id);
  const pipeline = await arrangePipeline({ ...org, clusterId });
  const build = await arrangeBuild(org, pipeline);
  const team = await arrangeTeam(org.id, privacy);
  const { suite } = await teams.createSuite({ organization: org.id, name: unique("Suite") });
  const teamPath = `/v2/organizations/${org.slug}/teams/${team.id}`;
  const linked = await send("POST", `${teamPath}/pipelines/`, org.secret, {
    pipeline_id: pipeline.id,
    access_level: "read_only",
  });
  const suited = await send("POST", `${teamPath}/suite/`, org.secret, { suite_id: suite?.id, access_level: ["read"] });
  if (linked.status !== 201 || suited.status !== 201) throw new Error(`team links: ${linked.text} ${suited.text}`);
  const second = await arrangePipeline({ ...org, clusterId });
  const rule = await send("POST", `/v2/organizations/${org.slug}/rules`, org.secret, {
    type: "pipeline.trigger_build.pipeline",
    value: { source_pipeline: pipeline.id, target_pipeline: second.id },
  });
  if (rule.status !== 201) throw new Error(`rule: ${rule.status} ${rule.text}`);
  return {
    id: org.id,
    slug: org.slug,
    adminId: owner.user.id,
    adminSecret: owner.secret,
    clusterId,
    pipeline,
    build,
    scheduleId: await arrangeSchedule(org, pipeline),
    teamId: team.id,
    suiteId: suite?.id ?? "",
    ruleId: rule.body.uuid,
    ...(await arrangeRegistryToken(org.slug, org.secret, org.id)),
    ...(await arrangeAgent(org.id, clusterId)),
    ...(await arrangeQueueAndMaintainer(org.id, clusterId, owner.user.id)),
    sourceProviderId: await arrangeSourceProvider(org),
    webhookId: await arrangeWebhook(org),
    secretId: await arrangeClusterSecret(org, clusterId),
  };
}

/** Arranges the whole world (about 20 s on a quiet stack). */
export async function arrangeWorld(): Promise<World> {
  const [a, b] = await Promise.all([arrangeOrg(TeamPrivacy.SECRET), arrangeOrg(TeamPrivacy.VISIBLE)]);
  const orgA = { id: a.id, slug: a.slug, secret: a.adminSecret, clusterId: a.clusterId };
  const qPipe = await arrangePipeline(orgA);
  await arrangeBuild(orgA, qPipe);
  const q = { ...qPipe, build: await arrangeBuild(orgA, qPipe), scheduleId: await arrangeSchedule(orgA, qPipe) };
  const { suite } = await teams.createSuite({ organization: a.id, name: unique("Loose") });
  const visible = await arrangeTeam(a.id, TeamPrivacy.VISIBLE);
  const other = await arrangeRegistryToken(a.slug, a.adminSecret, a.id);
  const lacking: Record<string, string> = {};
  await Promise.all(
    ALL_SCOPES.map(async (scope) => {
      const scopes = ALL_SCOPES.filter((s) => s !== scope);
      lacking[scope] = (await identity.createAccessToken({ userId: a.adminId, scopes })).secret;
    }),
  );
  const outsider = await arrangeMember(a.id, Role.MEMBER, ALL_SCOPES);
  const plain = await arrangeMember(a.id, Role.MEMBER, ALL_SCOPES);
  await arrangeTeamMember(a.id, a.teamId, plain.user?.id ?? "");
  await identity.addMember({ organization: b.id, userId: a.adminId, role: Role.MEMBER });
  const limited = await identity.createAccessToken({ userId: a.adminId, scopes: ALL_SCOPES, organizations: [b.id] });
  return {
    limitedToB: limited.secret,
    a,
    b,
    q,
    looseSuiteId: suite?.id ?? "",
    visibleTeamId: visible.id,
    otherRegistryTokenId: other.registryTokenId,
    lacking,
    outsider: { id: outsider.user?.id ?? "", secret: outsider.secret },
    plain: { id: plain.user?.id ?? "", secret: plain.secret },
  };
}
