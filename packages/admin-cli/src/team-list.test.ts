import { parseArgs } from "./args.js";
import { allFlags, COMMANDS, type CommandContext } from "./commands.js";

// `ci-admin team list` over a fake identity: every page as the operator, the user filter passed on.

const team = (n: number) => ({
  id: `t-${n}`,
  organizationId: "o-1",
  slug: `team-${n}`,
  name: `Team ${n}`,
  description: "",
  privacy: 2,
  membersCanCreatePipelines: n % 2 === 0,
});

function context(total: number) {
  const calls: Array<Record<string, unknown>> = [];
  const all = Array.from({ length: total }, (_, i) => team(i + 1));
  const ctx = {
    identity: () => ({ getOrganization: async () => ({ organization: { id: "o-1", slug: "acme" } }) }),
    teams: () => ({
      listTeams: async (req: { page: number; perPage: number }) => {
        calls.push(req);
        const start = (req.page - 1) * req.perPage;
        return { teams: all.slice(start, start + req.perPage), totalCount: total };
      },
    }),
  } as unknown as CommandContext;
  return { ctx, calls };
}

const run = (line: string, ctx: CommandContext) => {
  const args = parseArgs(line.split(" "), allFlags());
  return COMMANDS["team list"]?.run(args, ctx);
};

describe("ci-admin team list", () => {
  it("prints every team of every page, as the operator", async () => {
    const { ctx, calls } = context(150);
    const out = (await run("team list --org acme", ctx)) as Array<Record<string, unknown>>;
    expect(out).toHaveLength(150);
    expect(out[0]).toEqual({
      id: "t-1",
      organization_id: "o-1",
      slug: "team-1",
      name: "Team 1",
      description: "",
      privacy: "secret",
      members_can_create_pipelines: false,
      created_at: null,
    });
    expect(calls).toEqual([
      { organizationId: "o-1", userId: "", page: 1, perPage: 100 },
      { organizationId: "o-1", userId: "", page: 2, perPage: 100 },
    ]);
  });

  it("passes the user filter and stops at an empty page", async () => {
    const { ctx, calls } = context(0);
    expect(await run("team list --org acme --user u-1", ctx)).toEqual([]);
    expect(calls).toEqual([{ organizationId: "o-1", userId: "u-1", page: 1, perPage: 100 }]);
  });
});
