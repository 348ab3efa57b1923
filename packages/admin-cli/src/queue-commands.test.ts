import { parseArgs } from "./args.js";
import { allFlags, type CommandContext } from "./commands.js";
import { QUEUE_COMMANDS } from "./queue-commands.js";

const queue = {
  id: "q-1",
  clusterId: "c-1",
  key: "linux",
  description: "",
  dispatchPaused: false,
  dispatchPausedNote: "",
};

/** A context whose identity knows organization acme and whose agents service records the calls it gets. */
function context() {
  const calls: Array<[string, unknown]> = [];
  const record = (name: string) => async (req: unknown) => {
    calls.push([name, req]);
    return name === "listClusterQueues" ? { queues: [queue] } : { queue };
  };
  const ctx = {
    identity: () => ({ getOrganization: async () => ({ organization: { id: "o-1", slug: "acme" } }) }),
    agents: () =>
      Object.fromEntries(
        [
          "listClusterQueues",
          "createClusterQueue",
          "pauseClusterQueue",
          "resumeClusterQueue",
          "deleteClusterQueue",
        ].map((n) => [n, record(n)]),
      ),
  } as unknown as CommandContext;
  return { ctx, calls };
}

const run = (line: string, ctx: CommandContext) => {
  const args = parseArgs(line.split(" "), allFlags());
  const command = QUEUE_COMMANDS[args.words.slice(0, 2).join(" ")];
  if (!command) throw new Error(`no command ${line}`);
  return command.run(args, ctx);
};

describe("the queue commands", () => {
  it("list, create, pause, resume and delete a cluster's queues over the agents service", async () => {
    const { ctx, calls } = context();
    const where = { organizationId: "o-1", clusterId: "c-1" };
    expect(await run("queue list --org acme --cluster c-1", ctx)).toEqual({
      queues: [
        expect.objectContaining({ id: "q-1", key: "linux", dispatch_paused: false, dispatch_paused_note: null }),
      ],
    });
    await run("queue create --org acme --cluster c-1 --key linux --description big", ctx);
    await run("queue pause --org acme --cluster c-1 --id q-1 --note freeze", ctx);
    await run("queue resume --org acme --cluster c-1 --id q-1", ctx);
    expect(await run("queue delete --org acme --cluster c-1 --id q-1", ctx)).toEqual({ deleted: "q-1" });
    expect(calls).toEqual([
      ["listClusterQueues", where],
      ["createClusterQueue", { ...where, key: "linux", description: "big" }],
      ["pauseClusterQueue", { ...where, id: "q-1", note: "freeze" }],
      ["resumeClusterQueue", { ...where, id: "q-1" }],
      ["deleteClusterQueue", { ...where, id: "q-1" }],
    ]);
  });

  it("needs --cluster", async () => {
    await expect(run("queue list --org acme", context().ctx)).rejects.toThrow(/cluster/);
  });
});
