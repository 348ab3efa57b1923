import type { ClusterQueue } from "@conveyor/proto/agents";
import { isoTime } from "@conveyor/runtime";
import { type CliArgs, optionalFlag, requireFlag, UsageError } from "./args.js";
import type { CommandContext, CommandSpec } from "./commands.js";

/** The organization a command names by --org, and the cluster by --cluster (its UUID). */
async function clusterOf(args: CliArgs, ctx: CommandContext) {
  const slug = requireFlag(args, "org");
  const { organization } = await ctx.identity().getOrganization({ slug });
  if (!organization) throw new UsageError(`no organization ${slug}`);
  return { organizationId: organization.id, clusterId: requireFlag(args, "cluster") };
}

/** A queue as the commands print it: the REST answer's fields (docs/compatibility.md#clusters-and-queues). */
function queueOut(q: ClusterQueue | undefined) {
  return (
    q && {
      id: q.id,
      key: q.key,
      description: q.description,
      cluster_id: q.clusterId,
      dispatch_paused: q.dispatchPaused,
      dispatch_paused_at: isoTime(q.dispatchPausedAt),
      dispatch_paused_note: q.dispatchPausedNote || null,
      created_at: isoTime(q.createdAt),
    }
  );
}

const where = "--org SLUG --cluster CLUSTER_ID";
const flags: CommandSpec["flags"] = { org: "string", cluster: "string" };

/**
 * The cluster queue commands, over the agents service as the REST routes are: list, create, pause or resume
 * dispatch, and delete a cluster's queues.
 */
export const QUEUE_COMMANDS: Record<string, CommandSpec> = {
  "queue list": {
    usage: `queue list ${where}`,
    flags,
    async run(args, ctx) {
      const { queues } = await ctx.agents().listClusterQueues(await clusterOf(args, ctx));
      return { queues: queues.map(queueOut) };
    },
  },
  "queue create": {
    usage: `queue create ${where} --key KEY [--description TEXT]`,
    flags: { ...flags, key: "string", description: "string" },
    async run(args, ctx) {
      const { queue } = await ctx.agents().createClusterQueue({
        ...(await clusterOf(args, ctx)),
        key: requireFlag(args, "key"),
        description: optionalFlag(args, "description") ?? "",
      });
      return queueOut(queue);
    },
  },
  "queue pause": {
    usage: `queue pause ${where} --id QUEUE_ID [--note TEXT]`,
    flags: { ...flags, id: "string", note: "string" },
    async run(args, ctx) {
      const { queue } = await ctx.agents().pauseClusterQueue({
        ...(await clusterOf(args, ctx)),
        id: requireFlag(args, "id"),
        note: optionalFlag(args, "note") ?? "",
      });
      return queueOut(queue);
    },
  },
  "queue resume": {
    usage: `queue resume ${where} --id QUEUE_ID`,
    flags: { ...flags, id: "string" },
    async run(args, ctx) {
      const { queue } = await ctx
        .agents()
        .resumeClusterQueue({ ...(await clusterOf(args, ctx)), id: requireFlag(args, "id") });
      return queueOut(queue);
    },
  },
  "queue delete": {
    usage: `queue delete ${where} --id QUEUE_ID`,
    flags: { ...flags, id: "string" },
    async run(args, ctx) {
      const id = requireFlag(args, "id");
      await ctx.agents().deleteClusterQueue({ ...(await clusterOf(args, ctx)), id });
      return { deleted: id };
    },
  },
};
