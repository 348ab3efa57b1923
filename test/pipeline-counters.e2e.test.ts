import { Role } from "@conveyor/proto/identity";
import { eventually } from "./support/real-agent.js";
import { api, arrangeCluster, arrangeOrgUser, send, unique } from "./support/stack-env.js";

// A pipeline's counters as REST shows them, against the jobs its builds list: waiter jobs are bookkeeping and are not
// counted (the bench's create check found them counted once, doubling waiting_jobs_count).

const STEPS = `steps:
  - command: make test
    agents: {queue: nobody-serves-this}
  - wait
  - block: Ship?
  - command: make ship
    agents: {queue: nobody-serves-this}
`;

type Counters = Record<
  | "scheduled_builds_count"
  | "running_builds_count"
  | "scheduled_jobs_count"
  | "running_jobs_count"
  | "waiting_jobs_count",
  number
>;

const ZERO: Counters = {
  scheduled_builds_count: 0,
  running_builds_count: 0,
  scheduled_jobs_count: 0,
  running_jobs_count: 0,
  waiting_jobs_count: 0,
};

let org: Awaited<ReturnType<typeof arrangeOrgUser>>;
let pipelinePath: string;

/** The pipeline's counters once they equal `expected` (they are recounted in the background after a change). */
const countersBecome = (expected: Counters) =>
  eventually(`counters ${JSON.stringify(expected)}`, async () => {
    const { body } = await api(pipelinePath, org.secret);
    const counters = Object.fromEntries(Object.keys(ZERO).map((k) => [k, body[k]]));
    return JSON.stringify(counters) === JSON.stringify(expected) ? counters : undefined;
  });

beforeAll(async () => {
  org = await arrangeOrgUser({
    scopes: ["read_pipelines", "write_pipelines", "read_builds", "write_builds"],
    role: Role.ADMIN,
  });
  const created = await send("POST", `/v2/organizations/${org.organization.slug}/pipelines`, org.secret, {
    name: unique("counters"),
    repository: "https://example.com/repo.git",
    cluster_id: await arrangeCluster(org.organization.id),
    configuration: STEPS,
  });
  expect(created.status).toBe(201);
  pipelinePath = `/v2/organizations/${org.organization.slug}/pipelines/${created.body.slug}`;
});

it("counts a new build's jobs by state without its waiter, and nothing once the build is canceled", async () => {
  const build = await send("POST", `${pipelinePath}/builds`, org.secret, { commit: "HEAD", branch: "main" });
  expect(build.status).toBe(201);
  expect(build.body.jobs.map((j: { type: string; state: string }) => `${j.type} ${j.state}`)).toEqual([
    "script scheduled",
    "waiter waiting",
    "manual waiting",
    "script waiting",
  ]);
  // The waiter waits too, but only the block and the command behind it are waiting jobs.
  await countersBecome({ ...ZERO, scheduled_builds_count: 1, scheduled_jobs_count: 1, waiting_jobs_count: 2 });
  const second = await send("POST", `${pipelinePath}/builds`, org.secret, { commit: "HEAD", branch: "main" });
  expect(second.status).toBe(201);
  await countersBecome({ ...ZERO, scheduled_builds_count: 2, scheduled_jobs_count: 2, waiting_jobs_count: 4 });
  for (const b of [build.body, second.body]) {
    expect((await send("PUT", `${pipelinePath}/builds/${b.number}/cancel`, org.secret)).status).toBe(200);
  }
  await countersBecome(ZERO);
});
