import { Role } from "@conveyor/proto/identity";
import { api, arrangeCluster, arrangeMember, arrangeOrgUser, send, unique } from "./support/stack-env.js";
import { arrangeTeam, arrangeTeamMember } from "./support/teams-env.js";

// A block step's allowed_teams over REST, with real teams: only members of a listed team may unblock it (by the
// team's slug or UUID), a read-only member of one included, and nobody else, administrators and builders included.
// A block without allowed_teams needs build access, as before.

const SCOPES = ["read_pipelines", "write_pipelines", "read_builds", "write_builds"];

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
/** In the release team, which may only read the pipeline. */
let releaser: Awaited<ReturnType<typeof arrangeMember>>;
/** In the developers team, which may build the pipeline. */
let developer: Awaited<ReturnType<typeof arrangeMember>>;
let releaseTeam: { id: string; slug: string };
let developersTeam: { id: string; slug: string };
let clusterId: string;
const base = () => `/v2/organizations/${org.organization.slug}/pipelines`;

beforeAll(async () => {
  org = await arrangeOrgUser({ scopes: SCOPES, role: Role.ADMIN, teamsEnabled: true });
  clusterId = await arrangeCluster(org.organization.id);
  releaser = await arrangeMember(org.organization.id, Role.MEMBER, SCOPES);
  developer = await arrangeMember(org.organization.id, Role.MEMBER, SCOPES);
  releaseTeam = await arrangeTeam(org.organization.id);
  developersTeam = await arrangeTeam(org.organization.id);
  await arrangeTeamMember(org.organization.id, releaseTeam.id, releaser.user?.id ?? "");
  await arrangeTeamMember(org.organization.id, developersTeam.id, developer.user?.id ?? "");
});

/** A pipeline of both teams (release: read only, developers: build) whose steps are `configuration`. */
async function pipelineWith(configuration: string) {
  const res = await send("POST", base(), org.secret, {
    name: unique("Release"),
    repository: "git@github.com:acme/app.git",
    cluster_id: clusterId,
    configuration,
    teams: { [releaseTeam.id]: "read_only", [developersTeam.id]: "build_and_read" },
  });
  expect(res.status).toBe(201);
  return res.body.slug as string;
}

/** A new build of the pipeline, and the URL of its block job's unblock. */
async function blockedBuild(slug: string) {
  const build = await send("POST", `${base()}/${slug}/builds`, org.secret, { commit: "HEAD", branch: "main" });
  expect(build.status).toBe(201);
  const block = build.body.jobs.find((j: { type: string }) => j.type === "manual");
  expect(block.state).toBe("blocked");
  return {
    number: build.body.number as number,
    unblock: `${base()}/${slug}/builds/${build.body.number}/jobs/${block.id}/unblock`,
  };
}

describe("a block step with allowed_teams", () => {
  it("is unblocked only by a member of a listed team, even one who may only read the pipeline", async () => {
    const slug = await pipelineWith(
      `steps:\n  - block: "Release?"\n    allowed_teams: ["${releaseTeam.slug}"]\n  - command: ./release.sh\n`,
    );
    const { number, unblock } = await blockedBuild(slug);
    for (const [who, secret] of [
      ["admin", org.secret],
      ["developer", developer.secret],
    ] as const) {
      const refused = await send("PUT", unblock, secret, {});
      expect([who, refused.status, refused.body]).toEqual([who, 403, { message: "Forbidden" }]);
    }
    const still = await api(`${base()}/${slug}/builds/${number}`, org.secret);
    expect(still.body.jobs.find((j: { type: string }) => j.type === "manual").state).toBe("blocked");
    const done = await send("PUT", unblock, releaser.secret, {});
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ state: "unblocked", unblocked_by: { id: releaser.user?.id } });
  });

  it("names teams by UUID too", async () => {
    const slug = await pipelineWith(
      `steps:\n  - block: "Ship?"\n    allowed_teams:\n      - "${developersTeam.id}"\n  - command: ./ship.sh\n`,
    );
    const { unblock } = await blockedBuild(slug);
    expect((await send("PUT", unblock, releaser.secret, {})).status).toBe(403);
    const done = await send("PUT", unblock, developer.secret, {});
    expect([done.status, done.body.state]).toEqual([200, "unblocked"]);
  });
});

describe("a block step without allowed_teams", () => {
  it("needs build access to the pipeline", async () => {
    const slug = await pipelineWith(`steps:\n  - block: "Go?"\n  - command: ./go.sh\n`);
    const { unblock } = await blockedBuild(slug);
    const refused = await send("PUT", unblock, releaser.secret, {});
    expect([refused.status, refused.body]).toEqual([403, { message: "Forbidden" }]);
    const done = await send("PUT", unblock, developer.secret, {});
    expect([done.status, done.body.state]).toEqual([200, "unblocked"]);
  });
});
