import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { ListBuildsRequest } from "@conveyor/proto/builds";
import {
  type AddTeamMemberRequest,
  type AddTeamPipelineRequest,
  type AddTeamSuiteRequest,
  OrganizationSchema,
  PipelineAccessLevel,
  type RemoveTeamPipelineRequest,
  Role,
  SuiteAccessLevel,
  TeamMemberRole,
} from "@conveyor/proto/identity";
import { type ListPipelinesRequest, type Pipeline, PipelineSchema } from "@conveyor/proto/pipelines";
import type { FastifyInstance } from "fastify";
import { buildTestApp, type FakeServices, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

const acme = makeOrg("acme", "Acme");
const teamsOrg = create(OrganizationSchema, { ...makeOrg("teams", "Teams"), teamsEnabled: true });
const ann = makeUser(1, "Ann");
const bob = makeUser(2, "Bob");
const TEAM = "55555555-0000-4000-8000-000000000001";
const at = timestampFromDate(new Date("2026-02-03T04:05:06.789Z"));
const SCOPES = ["view_teams", "write_teams", "read_pipelines", "write_pipelines", "read_builds", "write_builds"];

function pipeline(org: typeof acme, slug: string, n: number): Pipeline {
  return create(PipelineSchema, {
    id: `33333333-0000-4000-8000-${String(n).padStart(12, "0")}`,
    organizationId: org.id,
    slug,
    name: slug,
    repository: "r",
    provider: { id: "git", webhookToken: "hook", settings: {} },
    visibility: "private",
    badgeToken: "b",
    createdAt: at,
  });
}
const visible = pipeline(teamsOrg, "visible", 1);
const hidden = pipeline(teamsOrg, "hidden", 2);

/** Fakes that record what the routes asked for. */
function fakes() {
  const calls = {
    addMember: [] as AddTeamMemberRequest[],
    addPipeline: [] as AddTeamPipelineRequest[],
    removePipeline: [] as RemoveTeamPipelineRequest[],
    addSuite: [] as AddTeamSuiteRequest[],
    access: 0,
    listPipelines: [] as ListPipelinesRequest[],
    listBuilds: [] as ListBuildsRequest[],
  };
  const services: FakeServices = {
    teams: {
      addTeamMember(req) {
        calls.addMember.push(req);
        if (req.role === TeamMemberRole.UNSPECIFIED) {
          throw new ConnectError("Validation failed: Role must be member or maintainer", Code.InvalidArgument);
        }
        return { member: { teamId: req.teamId, user: ann, role: req.role, createdAt: at } };
      },
      addTeamPipeline(req) {
        calls.addPipeline.push(req);
        return {
          pipeline: { teamId: req.teamId, pipelineId: req.pipelineId, accessLevel: req.accessLevel, createdAt: at },
        };
      },
      removeTeamPipeline(req) {
        calls.removePipeline.push(req);
        return {};
      },
      addTeamSuite(req) {
        calls.addSuite.push(req);
        return { suite: { teamId: req.teamId, suiteId: req.suiteId, accessLevels: req.accessLevels, createdAt: at } };
      },
      // Bob's team reads `visible` only.
      getPipelineAccess(req) {
        calls.access += 1;
        return {
          pipelines: req.pipelineIds.map((id) =>
            id === visible.id
              ? { pipelineId: id, level: PipelineAccessLevel.READ_ONLY, read: true, build: false, edit: false }
              : { pipelineId: id },
          ),
        };
      },
      listAccessiblePipelines() {
        calls.access += 1;
        return {
          pipelines: [
            { pipelineId: visible.id, level: PipelineAccessLevel.READ_ONLY, read: true, build: false, edit: false },
          ],
        };
      },
    },
    pipelines: {
      getPipeline(req) {
        const found = [visible, hidden].find(
          (p) => p.organizationId === req.organizationId && (p.slug === req.pipeline || p.id === req.pipeline),
        );
        if (!found) throw new ConnectError("No pipeline found", Code.NotFound);
        return { pipeline: found };
      },
      listPipelines(req) {
        calls.listPipelines.push(req);
        return { pipelines: [visible], totalCount: 1 };
      },
    },
    builds: {
      listBuilds(req) {
        calls.listBuilds.push(req);
        return { builds: [], hasMore: false };
      },
    },
  };
  return { calls, services };
}

describe("team routes and team-based pipeline access", () => {
  let app: FastifyInstance;
  let fake: ReturnType<typeof fakes>;
  beforeEach(async () => {
    fake = fakes();
    const world = {
      orgs: [acme, teamsOrg],
      users: [ann, bob],
      tokens: new Map([
        [
          "admin",
          makePrincipal(ann, SCOPES, [
            [acme, Role.ADMIN],
            [teamsOrg, Role.ADMIN],
          ]),
        ],
        ["member", makePrincipal(bob, SCOPES, [[teamsOrg, Role.MEMBER]])],
      ]),
      revoked: [],
    };
    app = (await buildTestApp(world, fake.services)).app;
  });
  afterEach(() => app.close());

  const call = (method: string, url: string, token = "admin", body?: unknown) =>
    app.inject({
      method: method as "GET",
      url,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  const team = `/v2/organizations/acme/teams/${TEAM}`;

  it("adds members at members and members/, mapping the role and naming the actor", async () => {
    for (const path of ["members", "members/"]) {
      const res = await call("POST", `${team}/${path}`, "admin", { user_id: ann.id, role: "maintainer" });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toEqual({
        user_id: ann.id,
        user_name: "Ann",
        role: "maintainer",
        created_at: "2026-02-03T04:05:06.789Z",
      });
    }
    expect(fake.calls.addMember[0]).toMatchObject({
      organizationId: acme.id,
      actorId: ann.id,
      teamId: TEAM,
      userId: ann.id,
      role: TeamMemberRole.MAINTAINER,
    });
    const bad = await call("POST", `${team}/members`, "admin", { user_id: ann.id, role: "owner" });
    expect([bad.statusCode, bad.json()]).toEqual([
      422,
      { message: "Validation failed: Role must be member or maintainer" },
    ]);
    expect(fake.calls.addMember[2]?.role).toBe(TeamMemberRole.UNSPECIFIED);
  });

  it("resolves a team pipeline's pipeline in the organization, passing an unknown one on as empty", async () => {
    const res = await call("POST", `${team}/pipelines/`, "admin", { pipeline_id: "nope", access_level: "read_only" });
    expect(res.statusCode).toBe(201);
    expect(fake.calls.addPipeline[0]).toMatchObject({ pipelineId: "", accessLevel: PipelineAccessLevel.READ_ONLY });
    const teamsTeam = `/v2/organizations/teams/teams/${TEAM}`;
    await call("POST", `${teamsTeam}/pipelines`, "admin", { pipeline_id: "visible", access_level: "build_and_read" });
    expect(fake.calls.addPipeline[1]).toMatchObject({
      pipelineId: visible.id,
      accessLevel: PipelineAccessLevel.BUILD_AND_READ,
    });
  });

  it("removes a team pipeline named in the path, the body or the query, and refuses one named nowhere", async () => {
    expect((await call("DELETE", `${team}/pipelines/${visible.id}`)).statusCode).toBe(204);
    expect((await call("DELETE", `${team}/pipelines/`, "admin", { pipeline_id: hidden.id })).statusCode).toBe(204);
    expect((await call("DELETE", `${team}/pipelines/?pipeline_id=${visible.id}`)).statusCode).toBe(204);
    expect(fake.calls.removePipeline.map((r) => r.pipelineId)).toEqual([visible.id, hidden.id, visible.id]);
    const unnamed = await call("DELETE", `${team}/pipelines/`);
    expect(unnamed.statusCode).toBe(422);
    expect(fake.calls.removePipeline).toHaveLength(3);
  });

  it("adds suites at suite, suite/, suites and suites/ with the levels as an array", async () => {
    for (const path of ["suite", "suite/", "suites", "suites/"]) {
      const res = await call("POST", `${team}/${path}`, "admin", { suite_id: TEAM, access_level: ["read", "edit"] });
      expect([path, res.statusCode, res.json().access_level]).toEqual([path, 201, ["read", "edit"]]);
    }
    expect(fake.calls.addSuite.map((r) => r.accessLevels)).toEqual(
      Array(4).fill([SuiteAccessLevel.READ, SuiteAccessLevel.EDIT]),
    );
  });

  it("asks identity nothing for an administrator, and once per request for a member whose teams decide", async () => {
    expect((await call("GET", "/v2/organizations/teams/pipelines/hidden", "admin")).statusCode).toBe(200);
    expect((await call("GET", "/v2/organizations/teams/pipelines", "admin")).statusCode).toBe(200);
    expect(fake.calls.access).toBe(0);
    expect(fake.calls.listPipelines[0]?.pipelineIds).toEqual([]);

    const seen = await call("GET", "/v2/organizations/teams/pipelines/visible", "member");
    expect([seen.statusCode, seen.json().provider.webhook_url]).toEqual([200, ""]);
    expect(fake.calls.access).toBe(1);
    expect((await call("GET", "/v2/organizations/teams/pipelines/hidden", "member")).json()).toEqual({
      message: "No pipeline found",
    });
    const edit = await call("PATCH", "/v2/organizations/teams/pipelines/visible", "member", { description: "x" });
    expect([edit.statusCode, edit.json()]).toEqual([403, { message: "Forbidden" }]);
    const build = await call("POST", "/v2/organizations/teams/pipelines/visible/builds", "member", {
      commit: "HEAD",
      branch: "main",
    });
    expect([build.statusCode, build.json()]).toEqual([403, { message: "Forbidden" }]);
  });

  it("restricts a member's lists to the pipelines their teams grant", async () => {
    await call("GET", "/v2/organizations/teams/pipelines", "member");
    expect(fake.calls.listPipelines.at(-1)?.pipelineIds).toEqual([visible.id]);
    await call("GET", "/v2/organizations/teams/builds", "member");
    expect(fake.calls.listBuilds.at(-1)).toMatchObject({ organizationIds: [], pipelineIds: [visible.id] });
    await call("GET", "/v2/builds", "admin");
    expect(fake.calls.listBuilds.at(-1)).toMatchObject({ organizationIds: [acme.id, teamsOrg.id], pipelineIds: [] });
  });
});
