import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Annotation, AnnotationSchema } from "@conveyor/proto/annotations";
import { type Artifact, ArtifactSchema } from "@conveyor/proto/artifacts";
import {
  type Build,
  BuildSchema,
  type Job,
  JobSchema,
  type StreamJobLogRequest,
  type UnblockJobRequest,
} from "@conveyor/proto/builds";
import {
  OrganizationSchema,
  PipelineAccessLevel,
  type Principal,
  PrincipalSchema,
  Role,
} from "@conveyor/proto/identity";
import { type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import { ALL_SCOPES, contentVersion, invalidFields } from "@conveyor/runtime";
import type { FastifyInstance } from "fastify";
import { sessionCsrfToken } from "../web/session/csrf.js";
import { SESSION_COOKIE } from "../web/session/session-cookie.js";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "./test-app.js";

/**
 * The world of the build page's unit tests (web/pages/build-*.test.ts, web/actions/*.test.ts): organizations,
 * people signed in by session, a pipeline with a build of every kind of job, its annotations, artifacts and logs,
 * over in-memory fakes of the services that record what they were asked.
 */

const at = (iso: string) => timestampFromDate(new Date(iso));

export const acme = makeOrg("acme", "Acme");
/** An organization whose teams decide pipeline access: Rita may only read its pipeline, through her team. */
export const teamsOrg = create(OrganizationSchema, { ...makeOrg("teamsorg", "Teams Org"), teamsEnabled: true });
export const ann = makeUser(1, "Ann");
export const rita = makeUser(2, "Rita");
export const olga = makeUser(3, "Olga");

/** A hostile text in every field a person writes, to check it is escaped wherever it shows. */
export const XSS = `<script>alert("x")</script><img src=x onerror=alert(1)>`;

function pipeline(org: typeof acme, slug: string, n: number): Pipeline {
  return create(PipelineSchema, {
    id: `33333333-0000-4000-8000-${String(n).padStart(12, "0")}`,
    organizationId: org.id,
    slug,
    name: `${slug} ${XSS}`,
    repository: "git@github.com:acme/web.git",
    allowRebuilds: true,
    createdAt: at("2026-01-01T00:00:00.000Z"),
  });
}
export const web = pipeline(acme, "web", 1);
export const app = pipeline(teamsOrg, "app", 2);

export const BUILD_ID = "55555555-0000-4000-8000-000000000007";
export const JOB = {
  passed: "44444444-0000-4000-8000-000000000001",
  firstAttempt: "44444444-0000-4000-8000-000000000002",
  failed: "44444444-0000-4000-8000-000000000003",
  softFailed: "44444444-0000-4000-8000-000000000004",
  waiter: "44444444-0000-4000-8000-000000000005",
  block: "44444444-0000-4000-8000-000000000006",
  teamBlock: "44444444-0000-4000-8000-000000000007",
  trigger: "44444444-0000-4000-8000-000000000008",
} as const;
export const AGENT_ID = "66666666-0000-4000-8000-000000000001";
export const RELEASE_TEAM = "77777777-0000-4000-8000-000000000001";

const who = (u: typeof ann) => ({ id: u.id, name: u.name, email: u.email, createdAt: u.createdAt });

function job(pipelineOf: Pipeline, init: MessageInitShape<typeof JobSchema>): Job {
  return create(JobSchema, {
    buildId: BUILD_ID,
    buildNumber: 7,
    pipelineId: pipelineOf.id,
    organizationId: pipelineOf.organizationId,
    createdAt: at("2026-02-01T10:00:00.000Z"),
    ...init,
  });
}

/** Build 7 of a pipeline: a job of every kind, a retried one, a soft failure, two block steps and a trigger. */
export function aBuild(of: Pipeline = web): Build {
  return create(BuildSchema, {
    id: BUILD_ID,
    organizationId: of.organizationId,
    pipelineId: of.id,
    pipelineSlug: of.slug,
    number: 7,
    state: "failing",
    blocked: false,
    message: `Fix the thing ${XSS}\nSecond line ${XSS}`,
    commit: "0123456789abcdef0123456789abcdef01234567",
    branch: `main${XSS}`,
    source: "ui",
    creator: who(ann),
    createdAt: at("2026-02-01T10:00:00.000Z"),
    startedAt: at("2026-02-01T10:00:05.000Z"),
    metaData: { [`key${XSS}`]: `value ${XSS}`, release: "v1" },
    rebuiltFrom: { id: "55555555-0000-4000-8000-000000000006", number: 6 },
    triggeredFrom: {
      buildId: "55555555-0000-4000-8000-000000000001",
      buildNumber: 3,
      pipelineSlug: "parent",
      jobId: "44444444-0000-4000-8000-0000000000aa",
    },
    jobs: [
      job(of, {
        id: JOB.passed,
        type: "script",
        name: `Build ${XSS}`,
        label: `Build ${XSS}`,
        command: `make ${XSS}`,
        stepPosition: 0,
        state: "passed",
        exitStatus: 0,
        agent: { id: AGENT_ID, name: `agent ${XSS}` },
        startedAt: at("2026-02-01T10:00:05.000Z"),
        finishedAt: at("2026-02-01T10:01:10.000Z"),
        manualRetryProblem: "Only failed, timed out or canceled jobs can be retried",
      }),
      job(of, {
        id: JOB.firstAttempt,
        type: "script",
        label: "Flaky",
        command: "make flaky",
        stepPosition: 1,
        state: "failed",
        exitStatus: 1,
        retried: true,
        retriedInJobId: JOB.failed,
        retryType: "manual",
        retriedBy: who(ann),
        manualRetryProblem: "This job has already been retried",
      }),
      job(of, {
        id: JOB.failed,
        type: "script",
        label: "Flaky",
        command: "make flaky",
        stepPosition: 1,
        state: "failed",
        exitStatus: 2,
        retriesCount: 1,
        retrySource: { jobId: JOB.firstAttempt, retryType: "manual" },
        createdAt: at("2026-02-01T10:05:00.000Z"),
      }),
      job(of, {
        id: JOB.softFailed,
        type: "script",
        label: "Lint",
        command: "make lint",
        stepPosition: 2,
        state: "failed",
        exitStatus: 3,
        softFailed: true,
      }),
      job(of, { id: JOB.waiter, type: "waiter", stepPosition: 3, state: "waiting_failed" }),
      job(of, {
        id: JOB.block,
        type: "manual",
        label: `Release ${XSS}`,
        stepPosition: 4,
        state: "blocked",
        block: {
          prompt: `Ship it? ${XSS}`,
          submit: "Ship",
          fields: [
            {
              key: "version",
              kind: "text",
              label: `Version ${XSS}`,
              hint: `semver ${XSS}`,
              required: true,
              defaultValues: [`v1${XSS}`],
              format: "v[0-9.]+",
            },
            {
              key: "regions",
              kind: "select",
              label: "Regions",
              required: false,
              multiple: true,
              defaultValues: ["eu"],
              options: [
                { label: "Europe", value: "eu" },
                { label: `US ${XSS}`, value: `us${XSS}` },
              ],
            },
            {
              key: "env",
              kind: "select",
              label: "Environment",
              required: true,
              options: [
                { label: "Staging", value: "staging" },
                { label: "Production", value: "production" },
              ],
            },
          ],
        },
      }),
      job(of, {
        id: JOB.teamBlock,
        type: "manual",
        label: "Team release",
        stepPosition: 5,
        state: "blocked",
        block: { prompt: "Release team only", fields: [], allowedTeams: ["release"] },
      }),
      job(of, {
        id: JOB.trigger,
        type: "trigger",
        label: "Deploy",
        stepPosition: 6,
        state: "passed",
        triggerPipeline: "deploy",
        triggeredBuild: { id: "55555555-0000-4000-8000-000000000099", number: 12, pipelineSlug: "deploy" },
      }),
    ],
  });
}

/** A log with colours, groups, a timestamp mark, hostile text and an OSC 8 link to a javascript: URL. */
export const COLOURED_LOG = [
  "\x1b_bk;t=1764236400000\x07--- \x1b[32mPreparing\x1b[0m",
  "checkout done",
  `+++ :test_tube: Tests ${XSS}`,
  "\x1b[31mFAIL\x1b[0m spec/thing_spec.rb",
  "\x1b]8;;javascript:alert(1)\x07click\x1b]8;;\x07",
  "",
].join("\n");

/** A log of `size` bytes of numbered lines (`line 000001 ...`), each of 64 bytes. */
export function numberedLog(size: number): Buffer {
  const lines = Math.ceil(size / 64);
  const out = Buffer.alloc(lines * 64);
  for (let i = 0; i < lines; i++) out.write(`line ${String(i + 1).padStart(8, "0")} ${"x".repeat(49)}\n`, i * 64);
  return out.subarray(0, size);
}

/** An answer of the app to an injected request. */
export type Injected = Awaited<ReturnType<FastifyInstance["inject"]>>;

/** What the fakes were asked. */
export interface Calls {
  streams: StreamJobLogRequest[];
  env: string[];
  retry: Array<{ jobId: string; user?: { id: string } | undefined }>;
  unblock: UnblockJobRequest[];
  cancel: number[];
  rebuild: number[];
  teams: string[];
  builds: number;
  /** GetBuild calls answered not modified (the caller held the build as it is). */
  notModified: number;
}

/** The world's fakes and a signed-in inject. */
export async function buildPageWorld(opts: { logs?: Map<string, Buffer>; chunkBytes?: number } = {}) {
  const logs = opts.logs ?? new Map([[JOB.passed, Buffer.from(COLOURED_LOG)]]);
  const chunkBytes = opts.chunkBytes ?? 64 * 1024;
  const builds = new Map<string, Build>([
    [`${web.id}:7`, aBuild(web)],
    [`${app.id}:7`, aBuild(app)],
  ]);
  const calls: Calls = {
    streams: [],
    env: [],
    retry: [],
    unblock: [],
    cancel: [],
    rebuild: [],
    teams: [],
    builds: 0,
    notModified: 0,
  };
  const sessions = new Map<string, Principal>();
  const session = (secret: string, user: typeof ann, orgs: Array<[typeof acme, Role]>, scopes = [...ALL_SCOPES]) => {
    const principal = create(PrincipalSchema, makePrincipal(user, scopes, orgs));
    if (principal.token) principal.token.id = `session:${secret}`;
    sessions.set(secret, principal);
  };
  session("ann", ann, [
    [acme, Role.MEMBER],
    [teamsOrg, Role.MEMBER],
  ]);
  session("rita", rita, [
    [acme, Role.MEMBER],
    [teamsOrg, Role.MEMBER],
  ]);
  session("olga", olga, [[teamsOrg, Role.MEMBER]]);
  session("noenv", ann, [[acme, Role.MEMBER]], ["read_builds"]);

  const findBuild = (pipelineId: string, number: number) => {
    const build = builds.get(`${pipelineId}:${number}`);
    if (!build) throw new ConnectError("No build found", Code.NotFound);
    return build;
  };
  const findJob = (pipelineId: string, number: number, jobId: string) => {
    const found = findBuild(pipelineId, number).jobs.find((j) => j.id === jobId);
    if (!found) throw new ConnectError("No job found", Code.NotFound);
    return found;
  };

  const annotations: Annotation[] = [
    create(AnnotationSchema, {
      id: "a1",
      context: `ctx ${XSS}`,
      style: "error",
      priority: 5,
      bodyHtml: "<p><strong>Broken</strong> tests</p>",
    }),
    create(AnnotationSchema, {
      id: "a2",
      context: "coverage",
      style: "info",
      priority: 3,
      bodyHtml: "<p>Coverage 91%</p>",
    }),
    create(AnnotationSchema, {
      id: "a3",
      context: "more-errors",
      style: "error",
      priority: 1,
      bodyHtml: "<p>Also this</p>",
    }),
  ];
  const jobAnnotations: Annotation[] = Array.from({ length: 250 }, (_, i) =>
    create(AnnotationSchema, {
      id: `job-a${i}`,
      jobId: JOB.failed,
      scope: "job",
      context: `job-ctx-${i}${i === 0 ? XSS : ""}`,
      style: "warning",
      priority: 3,
      bodyHtml: `<p>Job note ${i}</p>`,
    }),
  );
  const artifacts: Artifact[] = [
    create(ArtifactSchema, {
      id: "art-1",
      jobId: JOB.passed,
      path: `pkg/${XSS}.tgz`,
      fileSize: 2048n,
      state: "finished",
    }),
    create(ArtifactSchema, { id: "art-2", jobId: JOB.passed, path: "pkg/pending.txt", fileSize: 10n, state: "new" }),
  ];

  // API tokens for the REST log: Ann's with every scope, and one without read_build_logs.
  const tokens = new Map([
    ["token-ann", makePrincipal(ann, [...ALL_SCOPES], [[acme, Role.MEMBER]])],
    ["token-builds-only", makePrincipal(ann, ["read_builds"], [[acme, Role.MEMBER]])],
  ]);
  const { app: fastify } = await buildTestApp(
    { orgs: [acme, teamsOrg], users: [ann, rita, olga], tokens, revoked: [] },
    {
      identity: {
        authenticateSession(req) {
          const principal = sessions.get(req.secret);
          if (!principal) throw new ConnectError("ended", Code.Unauthenticated);
          return { principal };
        },
      },
      pipelines: {
        getPipeline(req) {
          const found = [web, app].find((p) => p.organizationId === req.organizationId && p.slug === req.pipeline);
          if (!found) throw new ConnectError("No pipeline found", Code.NotFound);
          return { pipeline: found };
        },
      },
      teams: {
        getPipelineAccess(req) {
          // In the teams organization Rita and Olga read `app` through their team; nobody builds it.
          return {
            pipelines: req.pipelineIds.map((id) =>
              id === app.id && req.userId !== ""
                ? { pipelineId: id, level: PipelineAccessLevel.READ_ONLY, read: true, build: false, edit: false }
                : { pipelineId: id },
            ),
          };
        },
        listUserTeams(req) {
          calls.teams.push(req.userId);
          return {
            teams: req.userId === rita.id ? [{ id: RELEASE_TEAM, slug: "release", name: "Release" }] : [],
          };
        },
      },
      builds: {
        getBuild(req) {
          calls.builds++;
          const found = findBuild(req.pipelineId, req.number);
          const build = req.includeRetriedJobs ? found : { ...found, jobs: found.jobs.filter((j) => !j.retried) };
          // Named by its content, as the builds service names it: an unchanged build is answered not modified.
          const version = contentVersion(toBinary(BuildSchema, create(BuildSchema, build)));
          if (req.ifNoneMatch === version) {
            calls.notModified++;
            return { version, notModified: true };
          }
          return { build, version };
        },
        async *streamJobLog(req) {
          calls.streams.push(req);
          findJob(req.pipelineId, req.number, req.jobId);
          if (req.fromOffset < 0n) throw invalidFields([{ field: "from_offset", code: "must be 0 or more" }]);
          const log = logs.get(req.jobId) ?? Buffer.alloc(0);
          yield { part: { case: "info", value: { size: BigInt(log.length), headerTimes: {}, deleted: false } } };
          const tail = Number(req.tailBytes);
          let offset = Math.max(Number(req.fromOffset), tail > 0 ? log.length - tail : 0);
          while (offset < log.length) {
            const end = Math.min(log.length, (Math.floor(offset / chunkBytes) + 1) * chunkBytes);
            yield { part: { case: "data", value: log.subarray(offset, end) }, offset: BigInt(offset) };
            offset = end;
          }
        },
        getJobEnv(req) {
          calls.env.push(req.jobId);
          findJob(req.pipelineId, req.number, req.jobId);
          return { env: { BUILDKITE: "true", SECRET_LOOKING: `value ${XSS}` } };
        },
        retryJob(req) {
          calls.retry.push({ jobId: req.jobId, user: req.user });
          const found = findJob(req.pipelineId, req.number, req.jobId);
          if (found.manualRetryProblem) throw new ConnectError(found.manualRetryProblem, Code.FailedPrecondition);
          return { job: { ...found, id: "44444444-0000-4000-8000-0000000000f1", state: "scheduled" } };
        },
        unblockJob(req) {
          calls.unblock.push(req);
          const found = findJob(req.pipelineId, req.number, req.jobId);
          const teams = found.block?.allowedTeams ?? [];
          const allowed = teams.length > 0 ? teams.some((t) => req.callerTeams.includes(t)) : !req.readOnly;
          if (!allowed) throw new ConnectError("Only members of the step's allowed_teams", Code.PermissionDenied);
          const version = req.fields.version?.values ?? [];
          if (found.id === JOB.block && !/^v[0-9.]+$/.test(version[0] ?? ""))
            throw invalidFields([{ field: "fields.version", code: "must match the format v[0-9.]+" }]);
          return { job: { ...found, state: "unblocked" } };
        },
        cancelBuild(req) {
          calls.cancel.push(req.number);
          return { build: findBuild(req.pipelineId, req.number) };
        },
        rebuildBuild(req) {
          calls.rebuild.push(req.number);
          return { build: { ...findBuild(req.pipeline?.id ?? "", req.number), number: 8 } };
        },
      },
      annotations: {
        listAnnotations(req) {
          findBuild(req.pipelineId, req.number);
          // The failed job's job-scoped annotations: 250 of them, paged as the builds service pages them.
          const all = req.jobId === "" ? annotations : req.jobId === JOB.failed ? jobAnnotations : [];
          const perPage = req.perPage || 30;
          const start = ((req.page || 1) - 1) * perPage;
          const hasMore = all.length > start + perPage;
          return { annotations: all.slice(start, start + perPage), hasMore, totalCount: hasMore ? all.length : 0 };
        },
      },
      artifacts: {
        listArtifacts(req) {
          return { artifacts: req.buildId === BUILD_ID ? artifacts : [], totalCount: artifacts.length };
        },
        signArtifactDownload(req) {
          const found = artifacts.find((a) => a.id === req.id && a.jobId === req.jobId);
          if (!found) throw new ConnectError("No artifact found", Code.NotFound);
          return {
            artifact: found,
            url: found.state === "finished" ? `${req.urlBase}/signed/${found.id}?sig=1` : "",
          };
        },
      },
    },
  );

  /** A GET as a signed-in person's browser sends it. */
  const get = (url: string, as = "ann", headers: Record<string, string> = {}): Promise<Injected> =>
    fastify.inject({ url, headers: { accept: "text/html", cookie: `${SESSION_COOKIE}=${as}`, ...headers } });

  /** A form POST as a signed-in person's browser sends it from the site, with the session's CSRF token. */
  const post = (
    url: string,
    as = "ann",
    fields: Array<[string, string]> = [],
    opts: { csrf?: boolean } = {},
  ): Promise<Injected> =>
    fastify.inject({
      method: "POST",
      url,
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        cookie: `${SESSION_COOKIE}=${as}`,
        origin: "http://web.test",
        "sec-fetch-site": "same-origin",
      },
      payload: new URLSearchParams([
        ...(opts.csrf === false ? [] : ([["_csrf", sessionCsrfToken(as)]] as Array<[string, string]>)),
        ...fields,
      ]).toString(),
    });

  return { app: fastify as FastifyInstance, calls, builds, logs, get, post };
}
