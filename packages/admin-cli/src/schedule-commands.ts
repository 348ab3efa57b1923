import type { PipelineSchedule } from "@conveyor/proto/pipelines";
import { isoTime } from "@conveyor/runtime";
import { type CliArgs, optionalFlag, requireFlag, UsageError } from "./args.js";
import type { CommandContext, CommandSpec } from "./commands.js";

/** The organization a command names by --org, and the pipeline by --pipeline (slug or UUID). */
async function pipelineOf(args: CliArgs, ctx: CommandContext) {
  const slug = requireFlag(args, "org");
  const { organization } = await ctx.identity().getOrganization({ slug });
  if (!organization) throw new UsageError(`no organization ${slug}`);
  return {
    organizationId: organization.id,
    organizationSlug: organization.slug,
    pipeline: requireFlag(args, "pipeline"),
  };
}

/** A schedule as the commands print it: the REST answer's fields (docs/compatibility.md#pipeline-schedules). */
function scheduleOut(s: PipelineSchedule | undefined) {
  return (
    s && {
      id: s.id,
      label: s.label,
      cronline: s.cronline,
      message: s.message || null,
      commit: s.commit,
      branch: s.branch,
      env: s.env,
      enabled: s.enabled,
      next_build_at: isoTime(s.nextBuildAt),
      failed_message: s.failedMessage ?? null,
      failed_at: isoTime(s.failedAt),
      created_at: isoTime(s.createdAt),
    }
  );
}

/** A command that turns a schedule on or off (turning it on works out its next build time again). */
function switchCommand(verb: string, enabled: boolean): CommandSpec {
  return {
    usage: `schedule ${verb} --org SLUG --pipeline SLUG --id SCHEDULE_ID`,
    flags: { org: "string", pipeline: "string", id: "string" },
    async run(args, ctx) {
      const { organizationId, pipeline } = await pipelineOf(args, ctx);
      const id = requireFlag(args, "id");
      const { schedule } = await ctx
        .pipelines()
        .updatePipelineSchedule({ organizationId, pipeline, id, attributes: { enabled } });
      return scheduleOut(schedule);
    },
  };
}

/** The pipeline schedule commands: list, create, enable or disable, and delete a pipeline's schedules. */
export const SCHEDULE_COMMANDS: Record<string, CommandSpec> = {
  "schedule list": {
    usage: "schedule list --org SLUG --pipeline SLUG",
    flags: { org: "string", pipeline: "string" },
    async run(args, ctx) {
      const { organizationId, pipeline } = await pipelineOf(args, ctx);
      const { schedules } = await ctx.pipelines().listPipelineSchedules({ organizationId, pipeline, perPage: 100 });
      return schedules.map(scheduleOut);
    },
  },
  "schedule create": {
    usage:
      "schedule create --org SLUG --pipeline SLUG --label LABEL --cronline CRONLINE [--branch BRANCH] [--commit COMMIT] [--message MESSAGE] [--disabled]",
    flags: {
      org: "string",
      pipeline: "string",
      label: "string",
      cronline: "string",
      branch: "string",
      commit: "string",
      message: "string",
      disabled: "boolean",
    },
    async run(args, ctx) {
      const { organizationId, organizationSlug, pipeline } = await pipelineOf(args, ctx);
      const { schedule } = await ctx.pipelines().createPipelineSchedule({
        organizationId,
        organizationSlug,
        pipeline,
        attributes: {
          label: requireFlag(args, "label"),
          cronline: requireFlag(args, "cronline"),
          branch: optionalFlag(args, "branch"),
          commit: optionalFlag(args, "commit"),
          message: optionalFlag(args, "message"),
          enabled: args.flags.disabled !== true,
        },
      });
      return scheduleOut(schedule);
    },
  },
  "schedule enable": switchCommand("enable", true),
  "schedule disable": switchCommand("disable", false),
  "schedule delete": {
    usage: "schedule delete --org SLUG --pipeline SLUG --id SCHEDULE_ID",
    flags: { org: "string", pipeline: "string", id: "string" },
    async run(args, ctx) {
      const { organizationId, pipeline } = await pipelineOf(args, ctx);
      const id = requireFlag(args, "id");
      await ctx.pipelines().deletePipelineSchedule({ organizationId, pipeline, id });
      return { deleted: id };
    },
  },
};
