import { mayUnblock as mayUnblockStep } from "@conveyor/ci-rules";
import type { Annotation } from "@conveyor/proto/annotations";
import type { Artifact } from "@conveyor/proto/artifacts";
import type { Build, Job } from "@conveyor/proto/builds";
import type { OrganizationAccess } from "@conveyor/proto/identity";
import type { Pipeline } from "@conveyor/proto/pipelines";
import type { FastifyRequest } from "fastify";
import { organizationAccess } from "../../auth/authenticate.js";
import { HttpError } from "../../errors/http-error.js";
import type { WebDeps } from "../web-deps.js";

/** The most annotations and artifacts one page of a build shows (the services' largest page). */
export const PAGE_ITEMS = 100;

/** One page (PAGE_ITEMS) of the annotations of a build or of one of its jobs, highest priority first. */
export interface AnnotationsPage {
  annotations: Annotation[];
  /** Which page, from 1. */
  page: number;
  /** How many the build (or job) has in all. */
  total: number;
}

/** Reads a page of the build's own annotations (jobId "") or of one job's job-scoped ones. */
export async function readAnnotations(
  deps: Pick<WebDeps, "clients">,
  ref: { pipelineId: string; number: number; jobId: string },
  page: number,
): Promise<AnnotationsPage> {
  const res = await deps.clients.annotations.listAnnotations({ ...ref, page, perPage: PAGE_ITEMS });
  const shown = (page - 1) * PAGE_ITEMS + res.annotations.length;
  return { annotations: res.annotations, page, total: Math.max(res.totalCount, shown + (res.hasMore ? 1 : 0)) };
}

/** What the build page shows, read with one call per service, none per job. */
export interface BuildPageData {
  access: OrganizationAccess;
  orgSlug: string;
  orgName: string;
  pipeline: Pipeline;
  /** Whether the person may build the pipeline: retry, rebuild, cancel, and unblock steps without allowed_teams. */
  canBuild: boolean;
  /** The build with every job, retried attempts included (REST's include_retried_jobs view). */
  build: Build;
  /** The builds service's version of the build (build-reader.ts), under which its job rows are kept. */
  buildVersion: string;
  /** A page of the build's own annotations (job-scoped ones are in their job's panel). */
  annotations: AnnotationsPage;
  /** One page of the build's artifacts, and how many there are in all. */
  artifacts: Artifact[];
  artifactsTotal: number;
  artifactsPage: number;
  /** The UUIDs and slugs of the person's teams, read only when a waiting block step names allowed_teams. */
  teams: readonly string[];
  /** Whether the person may read jobs' environments (the REST env route's scope, read_job_env). */
  canReadEnv: boolean;
}

/** The route parameters of a build's page. */
export interface BuildParams {
  org: string;
  pipeline: string;
  number: number;
}

/** Whether a waiting block step limits who may unblock it to teams: the person's teams are needed to know. */
const needsTeams = (jobs: readonly Job[]) =>
  jobs.some((j) => j.state === "blocked" && (j.block?.allowedTeams.length ?? 0) > 0);

/** The person's access to a build's pipeline, as REST decides it: 404 when they may not read it. */
export async function buildAccess(request: FastifyRequest, deps: WebDeps, params: BuildParams) {
  const access = organizationAccess(request, params.org);
  const { pipeline, canBuild } = await deps.pipelineAccess.pipeline(request, access, params.pipeline, "read");
  return { access, pipeline, canBuild };
}

/** The person's teams in an organization (UUIDs and slugs), as REST's unblock route reads them. */
export async function teamsOf(request: FastifyRequest, deps: WebDeps, access: OrganizationAccess) {
  const userId = request.principal?.user?.id ?? "";
  if (!userId) return [];
  const { teams } = await deps.clients.teams.listUserTeams({ organizationId: access.organization?.id ?? "", userId });
  return teams.flatMap((team) => [team.id, team.slug]);
}

/**
 * Reads what a build's page shows: the pipeline and the person's access to it, then the build and its annotations
 * together, then its artifacts (which the build's id names) and, only when a waiting block step needs them, the
 * person's teams.
 */
export async function loadBuildPage(
  request: FastifyRequest,
  deps: WebDeps,
  params: BuildParams,
  pages: { artifacts?: number | undefined; annotations?: number | undefined } = {},
): Promise<BuildPageData> {
  const artifactsPage = pages.artifacts ?? 1;
  const { access, pipeline, canBuild } = await buildAccess(request, deps, params);
  const ref = { pipelineId: pipeline.id, number: params.number };
  const [{ build, version }, annotations] = await Promise.all([
    deps.readBuild(ref.pipelineId, ref.number),
    readAnnotations(deps, { ...ref, jobId: "" }, pages.annotations ?? 1),
  ]);
  if (!build) throw new HttpError(404, "No build found");
  const [artifacts, teams] = await Promise.all([
    deps.clients.artifacts.listArtifacts({ buildId: build.id, jobId: "", page: artifactsPage, perPage: PAGE_ITEMS }),
    needsTeams(build.jobs) ? teamsOf(request, deps, access) : Promise.resolve([]),
  ]);
  return {
    access,
    orgSlug: access.organization?.slug ?? params.org,
    orgName: access.organization?.name ?? params.org,
    pipeline,
    canBuild,
    build,
    buildVersion: version,
    annotations,
    artifacts: artifacts.artifacts,
    artifactsTotal: artifacts.totalCount,
    artifactsPage,
    teams,
    canReadEnv: mayReadEnv(request),
  };
}

/** Whether the person may read jobs' environments: the REST env route's scope (a session carries every scope). */
export function mayReadEnv(request: FastifyRequest): boolean {
  return request.principal?.token?.scopes.includes("read_job_env") ?? false;
}

/**
 * Whether the person may unblock a block step: the builds service's rule (ci-rules' mayUnblock), which decides again
 * when they do. A step naming allowed_teams admits members of one of them, whatever their pipeline access; otherwise
 * anyone who may build the pipeline.
 */
export function mayUnblock(job: Job, data: Pick<BuildPageData, "canBuild" | "teams">): boolean {
  return mayUnblockStep(job.block?.allowedTeams, { teams: data.teams, readOnly: !data.canBuild });
}
