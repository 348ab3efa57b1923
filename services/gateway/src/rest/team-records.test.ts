import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type CreateTeamRequest,
  type ListTeamsRequest,
  Role,
  TeamPrivacy,
  TeamSchema,
  type UpdateTeamRequest,
} from "@conveyor/proto/identity";
import type { FastifyInstance } from "fastify";
import { buildTestApp, makeOrg, makePrincipal, makeUser } from "../testing/test-app.js";

// The team routes themselves (list, create, get, update, delete) over a recording fake identity.

const acme = makeOrg("acme", "Acme");
const ann = makeUser(1, "Ann");
const TEAM_ID = "55555555-0000-4000-8000-000000000001";
const team = (init: Partial<{ name: string; privacy: TeamPrivacy; membersCanCreatePipelines: boolean }> = {}) =>
  create(TeamSchema, {
    id: TEAM_ID,
    organizationId: acme.id,
    slug: "platform",
    name: "Platform",
    description: "d",
    privacy: TeamPrivacy.SECRET,
    membersCanCreatePipelines: true,
    createdAt: timestampFromDate(new Date("2026-02-03T04:05:06.789Z")),
    ...init,
  });

let app: FastifyInstance;
const calls = { list: [] as ListTeamsRequest[], create: [] as CreateTeamRequest[], update: [] as UpdateTeamRequest[] };

beforeAll(async () => {
  ({ app } = await buildTestApp(
    {
      orgs: [acme],
      users: [ann],
      tokens: new Map([
        ["writer", makePrincipal(ann, ["view_teams", "write_teams"], [[acme, Role.ADMIN]])],
        ["reader", makePrincipal(ann, ["view_teams"], [[acme, Role.ADMIN]])],
      ]),
      revoked: [],
    },
    {
      teams: {
        listTeams(req) {
          calls.list.push(req);
          return { teams: [team()], totalCount: 3 };
        },
        createTeam(req) {
          calls.create.push(req);
          return { team: team({ name: req.name, membersCanCreatePipelines: req.membersCanCreatePipelines ?? true }) };
        },
        getTeam(req) {
          if (req.teamId !== TEAM_ID) throw new ConnectError("No team found", Code.NotFound);
          return { team: team() };
        },
        updateTeam(req) {
          calls.update.push(req);
          return { team: team({ name: req.name ?? "Platform" }) };
        },
        deleteTeam(req) {
          if (req.teamId !== TEAM_ID) throw new ConnectError("No team found", Code.NotFound);
          return {};
        },
      },
    },
  ));
});
afterAll(() => app.close());
beforeEach(() => {
  calls.list.length = 0;
  calls.create.length = 0;
  calls.update.length = 0;
});

const call = (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: unknown, secret = "writer") =>
  app.inject({ method, url, headers: { authorization: `Bearer ${secret}` }, ...(payload ? { payload } : {}) });
const TEAMS = "/v2/organizations/acme/teams";

describe("the team routes", () => {
  it("lists with user_id and paging as go-buildkite's Teams.List decodes it", async () => {
    const res = await call("GET", `${TEAMS}?user_id=${ann.id}&per_page=1`, undefined, "reader");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([
      {
        id: TEAM_ID,
        graphql_id: expect.any(String),
        slug: "platform",
        name: "Platform",
        description: "d",
        privacy: "secret",
        default: false,
        is_default_team: false,
        default_member_role: "member",
        members_can_create_pipelines: true,
        members_can_create_suites: false,
        members_can_create_registries: false,
        members_can_destroy_registries: false,
        members_can_destroy_packages: false,
        created_at: "2026-02-03T04:05:06.789Z",
        created_by: null,
      },
    ]);
    expect(res.headers.link).toContain('rel="next"');
    expect(calls.list[0]).toMatchObject({ organizationId: acme.id, actorId: ann.id, userId: ann.id, perPage: 1 });
  });

  it("creates (201) with the caller as actor, taking false for the settings Conveyor has no use for", async () => {
    const res = await call("POST", TEAMS, {
      name: "Platform",
      privacy: "visible",
      is_default_team: false,
      members_can_create_pipelines: false,
      members_can_create_suites: false,
      members_can_destroy_packages: false,
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ name: "Platform", members_can_create_pipelines: false });
    expect(calls.create[0]).toMatchObject({
      organization: acme.id,
      actorId: ann.id,
      name: "Platform",
      privacy: TeamPrivacy.VISIBLE,
      membersCanCreatePipelines: false,
    });
  });

  it("refuses true default-team and member settings, a default_member_role, bad privacy and unknown fields", async () => {
    const refused = await call("POST", TEAMS, { name: "X", is_default_team: true, members_can_create_suites: true });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().errors).toEqual([
      { field: "is_default_team", code: "is not supported (only false)" },
      { field: "members_can_create_suites", code: "is not supported (only false)" },
    ]);
    for (const body of [
      { name: "X", default_member_role: "member" },
      { name: "X", privacy: "public" },
      { name: "X", colour: "red" },
      { description: "no name" },
    ]) {
      expect([JSON.stringify(body), (await call("POST", TEAMS, body)).statusCode]).toEqual([JSON.stringify(body), 422]);
    }
    expect(calls.create).toEqual([]);
  });

  it("gets, updates (PATCH keeps what is absent or empty) and deletes", async () => {
    expect((await call("GET", `${TEAMS}/${TEAM_ID}`, undefined, "reader")).json()).toMatchObject({ id: TEAM_ID });
    expect((await call("GET", `${TEAMS}/other`, undefined, "reader")).json()).toEqual({ message: "No team found" });
    const res = await call("PATCH", `${TEAMS}/${TEAM_ID}`, { name: "", description: "new", is_default_team: false });
    expect(res.statusCode).toBe(200);
    expect(calls.update[0]).toMatchObject({ teamId: TEAM_ID, actorId: ann.id, description: "new" });
    expect(calls.update[0]?.name).toBeUndefined();
    expect(calls.update[0]?.privacy).toBe(TeamPrivacy.UNSPECIFIED);
    expect((await call("DELETE", `${TEAMS}/${TEAM_ID}`)).statusCode).toBe(204);
    expect((await call("DELETE", `${TEAMS}/${TEAM_ID}`, undefined, "reader")).statusCode).toBe(403);
  });
});
