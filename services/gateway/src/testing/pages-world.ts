import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { type Agent, AgentSchema, type PauseAgentRequest, type StopAgentRequest } from "@conveyor/proto/agents";
import {
  type Build,
  BuildSchema,
  type CreateBuildRequest,
  type ListBuildsRequest,
  type ReadBuildsRequest,
} from "@conveyor/proto/builds";
import {
  type Organization,
  OrganizationSchema,
  PipelineAccessLevel,
  type Principal,
  PrincipalSchema,
  Role,
} from "@conveyor/proto/identity";
import { type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import { ALL_SCOPES, contentVersion, failedPrecondition, invalidFields } from "@conveyor/runtime";
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from "fastify";
import { sessionCsrfToken } from "../web/session/csrf.js";
import { SESSION_COOKIE } from "../web/session/session-cookie.js";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "./test-app.js";

/**
 * The world of the organization, pipeline, agents and badge pages' unit tests (web/pages/*.test.ts,
 * web/actions/*.test.ts, web/badge/*.test.ts): organizations, people signed in by session, pipelines with builds,
 * agents, over in-memory fakes of the services that record what they were asked. Every text a person or an agent
 * writes carries a hostile payload, to check it is escaped wherever it shows.
 */

const at = (iso: string) => timestampFromDate(new Date(iso));

/** A hostile text, as names, messages, branches and tags carry it. */
export const XSS = `<script>alert("x")</script><img src=x onerror=alert(1)>`;
/** What the escaped payload looks like in a page. */
export const XSS_ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;";

export const acme = makeOrg("acme", `Acme ${XSS}`);
/** An organization whose teams decide pipeline access. */
export const teamsOrg = create(OrganizationSchema, { ...makeOrg("teamsorg", "Teams Org"), teamsEnabled: true });
/** An organization nobody of the world's people belongs to. */
export const elsewhere = makeOrg("elsewhere", "Elsewhere");

/** Acme's administrator. */
export const ann = makeUser(1, "Ann");
/** A member of Acme (teams disabled: reads and builds every pipeline, controls no agent). */
export const bob = makeUser(2, "Bob");
/** A member of the teams organization who reads `app` through a team, and may build nothing. */
export const rita = makeUser(3, "Rita");
/** A member of the teams organization in no team: sees no pipeline. */
export const olga = makeUser(4, "Olga");

function pipeline(
  org: Organization,
  slug: string,
  n: number,
  init: Partial<MessageInitShape<typeof PipelineSchema>> = {},
): Pipeline {
  return create(PipelineSchema, {
    id: `33333333-0000-4000-8000-${String(n).padStart(12, "0")}`,
    organizationId: org.id,
    slug,
    name: `${slug} ${XSS}`,
    description: `About ${slug} ${XSS}`,
    repository: `git@github.com:acme/${slug}.git`,
    defaultBranch: "main",
    badgeToken: `badge${String(n).padStart(20, "0")}`,
    createdAt: at("2026-01-01T00:00:00.000Z"),
    ...init,
  } as MessageInitShape<typeof PipelineSchema>);
}
export const web = pipeline(acme, "web", 1);
export const api = pipeline(acme, "api", 2, { defaultBranch: "" });
export const app = pipeline(teamsOrg, "app", 3);
export const hidden = pipeline(teamsOrg, "hidden", 4);
export const PIPELINES = [web, api, app, hidden];

const who = (u: typeof ann) => ({ id: u.id, name: u.name, email: u.email, createdAt: u.createdAt });

let seq = 0;
/** A build of a pipeline; every text it carries is hostile. */
export function aBuild(p: Pipeline, number: number, init: Partial<MessageInitShape<typeof BuildSchema>> = {}): Build {
  seq += 1;
  return create(BuildSchema, {
    id: `55555555-0000-4000-8000-${String(seq).padStart(12, "0")}`,
    organizationId: p.organizationId,
    pipelineId: p.id,
    pipelineSlug: p.slug,
    number,
    state: "passed",
    message: `Build ${number} ${XSS}\nmore`,
    commit: "0123456789abcdef0123456789abcdef01234567",
    branch: "main",
    source: "api",
    creator: who(ann),
    createdAt: at(`2026-02-01T10:${String(number % 60).padStart(2, "0")}:00.000Z`),
    startedAt: at(`2026-02-01T10:${String(number % 60).padStart(2, "0")}:05.000Z`),
    finishedAt: at(`2026-02-01T10:${String(number % 60).padStart(2, "0")}:50.000Z`),
    ...init,
  } as MessageInitShape<typeof BuildSchema>);
}

export const AGENT_ID = "66666666-0000-4000-8000-000000000001";
export const JOB_ID = "44444444-0000-4000-8000-000000000001";

/** Acme's agent, running a job of `web`, with hostile name and tags. */
export function anAgent(init: Partial<MessageInitShape<typeof AgentSchema>> = {}): Agent {
  return create(AgentSchema, {
    id: AGENT_ID,
    organizationId: acme.id,
    name: `agent ${XSS}`,
    hostname: `host ${XSS}`,
    version: "3.137.0",
    os: "linux",
    arch: "amd64",
    ipAddress: "10.0.0.1",
    queue: "default",
    metaData: ["queue=default", `os=${XSS}`],
    connectionState: "connected",
    currentJobId: JOB_ID,
    connectedAt: at("2026-02-01T09:00:00.000Z"),
    lastSeenAt: at("2026-02-01T10:00:00.000Z"),
    ...init,
  } as MessageInitShape<typeof AgentSchema>);
}

/** What the fakes were asked. */
export interface PageCalls {
  listPipelines: number;
  readBuilds: ReadBuildsRequest[];
  listBuilds: ListBuildsRequest[];
  createBuild: CreateBuildRequest[];
  pause: PauseAgentRequest[];
  resume: string[];
  stop: StopAgentRequest[];
  badgeLookups: number;
}

/**
 * The builds of a list request, newest first, as the builds service filters and pages them, with a version naming
 * the page's content; not modified (no builds) when the request names that version.
 */
function listOf(builds: readonly Build[], req: ListBuildsRequest) {
  const found = builds
    .filter((b) => req.organizationIds.includes(b.organizationId))
    .filter((b) => req.pipelineId === "" || b.pipelineId === req.pipelineId)
    .filter((b) => req.branches.length === 0 || req.branches.includes(b.branch))
    .filter((b) => req.states.length === 0 || req.states.includes(b.state))
    .filter((b) => req.creatorId === "" || b.creator?.id === req.creatorId)
    .sort((a, b) => b.number - a.number);
  const perPage = req.perPage || 30;
  const start = ((req.page || 1) - 1) * perPage;
  const page = found.slice(start, start + perPage);
  const hasMore = found.length > start + perPage;
  const version = contentVersion(...page.map((b) => toBinary(BuildSchema, b)), hasMore ? "+" : ".");
  if (req.ifNoneMatch !== "" && req.ifNoneMatch === version) return { builds: [], hasMore, version, notModified: true };
  return { builds: page, hasMore, version };
}

/** The world's app, what its fakes hold and were asked, and requests as its people. */
export interface PagesWorld {
  app: FastifyInstance;
  calls: PageCalls;
  builds: Build[];
  agents: Agent[];
  /** A request as the person signed in with `secret` (no session when null), asking for HTML. */
  as(secret: string | null, options: InjectOptions): Promise<LightMyRequestResponse>;
  /** A form post as the person, with their session's CSRF token unless `csrf` says otherwise (null: none). */
  post(
    secret: string,
    url: string,
    form: Record<string, string>,
    csrf?: string | null,
  ): Promise<LightMyRequestResponse>;
}

/** The world's fakes and signed-in requests. */
export async function pagesWorld(opts: { builds?: Build[]; agents?: Agent[] } = {}): Promise<PagesWorld> {
  const builds: Build[] = opts.builds ?? [
    ...Array.from({ length: 35 }, (_, i) =>
      aBuild(web, i + 1, {
        state: i === 34 ? "failed" : i % 7 === 3 ? "running" : "passed",
        branch: i === 34 ? `feature ${XSS}` : "main",
      }),
    ),
    aBuild(api, 1, { state: "failed", branch: "topic" }),
    aBuild(app, 1, { state: "passed" }),
    aBuild(hidden, 1, { state: "failed", message: "hidden build" }),
  ];
  const agents = opts.agents ?? [anAgent()];
  const calls: PageCalls = {
    listPipelines: 0,
    readBuilds: [],
    listBuilds: [],
    createBuild: [],
    pause: [],
    resume: [],
    stop: [],
    badgeLookups: 0,
  };
  const sessions = new Map<string, Principal>();
  const session = (secret: string, user: typeof ann, orgs: Array<[Organization, Role]>) => {
    const principal = create(PrincipalSchema, makePrincipal(user, [...ALL_SCOPES], orgs));
    if (principal.token) principal.token.id = `session:${secret}`;
    sessions.set(secret, principal);
  };
  session("ann", ann, [[acme, Role.ADMIN]]);
  session("bob", bob, [[acme, Role.MEMBER]]);
  session("rita", rita, [[teamsOrg, Role.MEMBER]]);
  session("olga", olga, [[teamsOrg, Role.MEMBER]]);

  const findPipeline = (organizationId: string, ref: string) =>
    PIPELINES.find((p) => p.organizationId === organizationId && (p.slug === ref || p.id === ref));
  /** Rita reads `app` through her team; nobody else has a team. */
  const teamAccess = (userId: string, pipelineId: string) =>
    userId === rita.id && pipelineId === app.id
      ? { pipelineId, level: PipelineAccessLevel.READ_ONLY, read: true, build: false, edit: false }
      : { pipelineId };

  const { app: fastify } = await buildTestApp(
    { orgs: [acme, teamsOrg, elsewhere], users: [ann, bob, rita, olga], tokens: new Map(), revoked: [] },
    {
      identity: {
        authenticateSession(req) {
          const principal = sessions.get(req.secret);
          if (!principal) throw new ConnectError("ended", Code.Unauthenticated);
          return { principal };
        },
      },
      pipelines: {
        listPipelines(req) {
          calls.listPipelines += 1;
          const all = PIPELINES.filter((p) => p.organizationId === req.organizationId)
            .filter((p) => req.pipelineIds.length === 0 || req.pipelineIds.includes(p.id))
            .sort((a, b) => a.name.localeCompare(b.name));
          const perPage = req.perPage || 30;
          const start = ((req.page || 1) - 1) * perPage;
          return { pipelines: all.slice(start, start + perPage), totalCount: all.length };
        },
        getPipeline(req) {
          const found = findPipeline(req.organizationId, req.pipeline);
          if (!found) throw new ConnectError("No pipeline found", Code.NotFound);
          return { pipeline: found };
        },
        getPipelineByBadgeToken(req) {
          calls.badgeLookups += 1;
          const found = PIPELINES.find((p) => p.badgeToken === req.badgeToken);
          if (!found) throw new ConnectError("No pipeline found", Code.NotFound);
          return { pipeline: found };
        },
      },
      teams: {
        getPipelineAccess(req) {
          return { pipelines: req.pipelineIds.map((id) => teamAccess(req.userId, id)) };
        },
        listAccessiblePipelines(req) {
          const ids = PIPELINES.filter((p) => req.organizationIds.includes(p.organizationId)).map((p) => p.id);
          return { pipelines: ids.map((id) => teamAccess(req.userId, id)).filter((a) => a.read) };
        },
      },
      builds: {
        readBuilds(req) {
          calls.readBuilds.push(req);
          return {
            results: req.reads.map((r) => {
              if (r.read.case !== "list") throw new Error("only list reads");
              return { result: { case: "list" as const, value: listOf(builds, r.read.value) } };
            }),
          };
        },
        listBuilds(req) {
          calls.listBuilds.push(req);
          return listOf(builds, req);
        },
        createBuild(req) {
          calls.createBuild.push(req);
          if (req.branch === "refused") throw invalidFields([{ field: "branch", code: `is not allowed ${XSS}` }]);
          const p = PIPELINES.find((x) => x.id === req.pipelineId) as Pipeline;
          const build = aBuild(p, 100 + calls.createBuild.length, { state: "scheduled", branch: req.branch });
          builds.push(build);
          return { build };
        },
        getJob(req) {
          if (req.jobId !== JOB_ID) throw new ConnectError("No job found", Code.NotFound);
          return { job: { id: JOB_ID, organizationId: acme.id, pipelineId: web.id, buildNumber: 35 } };
        },
      },
      agents: {
        listAgents(req) {
          const found = agents.filter((a) => a.organizationId === req.organizationId);
          return { agents: found.filter((a) => req.name === "" || a.name.includes(req.name)), hasMore: false };
        },
        getAgent(req) {
          const found = agents.find((a) => a.organizationId === req.organizationId && a.id === req.id);
          if (!found) throw new ConnectError("No agent found", Code.NotFound);
          return { agent: found };
        },
        pauseAgent(req) {
          calls.pause.push(req);
          const found = agents.find((a) => a.id === req.id) as Agent;
          if (found.paused) throw failedPrecondition("Agent is already paused");
          found.paused = true;
          found.pausedNote = req.note;
          return { agent: found };
        },
        resumeAgent(req) {
          calls.resume.push(req.id);
          const found = agents.find((a) => a.id === req.id) as Agent;
          found.paused = false;
          return { agent: found };
        },
        stopAgent(req) {
          calls.stop.push(req);
          return {};
        },
      },
    },
  );

  /** A request as the person signed in with `secret` (no session when null). */
  const as = (secret: string | null, options: InjectOptions) =>
    fastify.inject({
      ...options,
      headers: {
        accept: "text/html",
        ...(secret ? { cookie: `${SESSION_COOKIE}=${secret}` } : {}),
        ...options.headers,
      },
    });
  /** A form post as the person, with their session's CSRF token unless `csrf` says otherwise. */
  const post = (
    secret: string,
    url: string,
    form: Record<string, string>,
    csrf: string | null = sessionCsrfToken(secret),
  ) =>
    as(secret, {
      method: "POST",
      url,
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: new URLSearchParams({ ...form, ...(csrf === null ? {} : { _csrf: csrf }) }).toString(),
    });
  return { app: fastify as FastifyInstance, calls, builds, agents, as, post };
}
