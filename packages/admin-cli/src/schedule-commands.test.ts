import { parseArgs } from "./args.js";
import { allFlags, type CommandContext } from "./commands.js";
import { SCHEDULE_COMMANDS } from "./schedule-commands.js";

const schedule = {
  id: "s-1",
  label: "Nightly",
  cronline: "@daily",
  message: "",
  commit: "HEAD",
  branch: "main",
  env: {},
  enabled: true,
  nextBuildAt: { seconds: BigInt(1_772_409_600), nanos: 0 },
};

/** A context whose identity knows organization acme and whose pipelines service records the calls it gets. */
function context() {
  const calls: Array<[string, unknown]> = [];
  const record = (name: string) => async (req: unknown) => {
    calls.push([name, req]);
    return name === "listPipelineSchedules" ? { schedules: [schedule] } : { schedule };
  };
  const ctx = {
    identity: () => ({ getOrganization: async () => ({ organization: { id: "o-1", slug: "acme" } }) }),
    pipelines: () => ({
      listPipelineSchedules: record("listPipelineSchedules"),
      createPipelineSchedule: record("createPipelineSchedule"),
      updatePipelineSchedule: record("updatePipelineSchedule"),
      deletePipelineSchedule: record("deletePipelineSchedule"),
    }),
  } as unknown as CommandContext;
  return { ctx, calls };
}

const run = (line: string, ctx: CommandContext) => {
  const args = parseArgs(line.split(" "), allFlags());
  const key = args.words.slice(0, 2).join(" ");
  const command = SCHEDULE_COMMANDS[key];
  if (!command) throw new Error(`no command ${key}`);
  return command.run(args, ctx);
};

describe("the schedule commands", () => {
  it("lists a pipeline's schedules by organization id, as REST shows them", async () => {
    const { ctx, calls } = context();
    const out = await run("schedule list --org acme --pipeline app", ctx);
    expect(calls).toEqual([["listPipelineSchedules", { organizationId: "o-1", pipeline: "app", perPage: 100 }]]);
    expect(out).toEqual([
      expect.objectContaining({
        id: "s-1",
        cronline: "@daily",
        message: null,
        next_build_at: "2026-03-02T00:00:00.000Z",
      }),
    ]);
  });

  it("creates a schedule with the flags given, disabled when asked", async () => {
    const { ctx, calls } = context();
    await run(
      "schedule create --org acme --pipeline app --label Nightly --cronline @daily --branch dev --disabled",
      ctx,
    );
    expect(calls).toEqual([
      [
        "createPipelineSchedule",
        {
          organizationId: "o-1",
          organizationSlug: "acme",
          pipeline: "app",
          attributes: {
            label: "Nightly",
            cronline: "@daily",
            branch: "dev",
            commit: undefined,
            message: undefined,
            enabled: false,
          },
        },
      ],
    ]);
  });

  it("enables, disables and deletes a schedule by id", async () => {
    const { ctx, calls } = context();
    await run("schedule disable --org acme --pipeline app --id s-1", ctx);
    await run("schedule enable --org acme --pipeline app --id s-1", ctx);
    expect(await run("schedule delete --org acme --pipeline app --id s-1", ctx)).toEqual({ deleted: "s-1" });
    expect(calls.map(([name, req]) => [name, (req as { attributes?: unknown }).attributes])).toEqual([
      ["updatePipelineSchedule", { enabled: false }],
      ["updatePipelineSchedule", { enabled: true }],
      ["deletePipelineSchedule", undefined],
    ]);
  });
});
