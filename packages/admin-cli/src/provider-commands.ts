import type { SourceProvider } from "@conveyor/proto/source-providers";
import { isoTime } from "@conveyor/runtime";
import { type CliArgs, optionalFlag, requireFlag, UsageError } from "./args.js";
import type { CommandContext, CommandSpec } from "./commands.js";

/** The organization a command names by --org. */
async function organizationOf(args: CliArgs, ctx: CommandContext) {
  const slug = requireFlag(args, "org");
  const { organization } = await ctx.identity().getOrganization({ slug });
  if (!organization) throw new UsageError(`no organization ${slug}`);
  return organization.id;
}

/** A connection as the commands print it: the REST answer's fields (docs/statuses.md#connections); never a token. */
export function providerOut(p: SourceProvider | undefined) {
  return (
    p && {
      id: p.id,
      kind: p.kind,
      api_url: p.apiUrl,
      repository_host: p.repositoryHost,
      credential_type: p.credentialType,
      description: p.description || null,
      created_at: isoTime(p.createdAt),
    }
  );
}

/** The source-provider commands (docs/statuses.md#connections): add, list and remove an organization's forges. */
export const PROVIDER_COMMANDS: Record<string, CommandSpec> = {
  "provider add": {
    usage:
      "provider add --org SLUG --kind github|github_enterprise|gitlab|bitbucket|gitea [--api-url URL] --token TOKEN|- [--description TEXT]",
    flags: { org: "string", kind: "string", "api-url": "string", token: "string", description: "string" },
    async run(args, ctx) {
      const organizationId = await organizationOf(args, ctx);
      // `--token -` reads it from stdin, so that it shows in no process list.
      const given = requireFlag(args, "token");
      const token = given === "-" ? await ctx.readPassword() : given;
      const { sourceProvider } = await ctx.sourceProviders().createSourceProvider({
        organizationId,
        kind: requireFlag(args, "kind"),
        apiUrl: optionalFlag(args, "api-url") ?? "",
        token,
        description: optionalFlag(args, "description") ?? "",
      });
      return providerOut(sourceProvider);
    },
  },
  "provider list": {
    usage: "provider list --org SLUG",
    flags: { org: "string" },
    async run(args, ctx) {
      const organizationId = await organizationOf(args, ctx);
      const { sourceProviders } = await ctx.sourceProviders().listSourceProviders({ organizationId });
      return sourceProviders.map(providerOut);
    },
  },
  "provider remove": {
    usage: "provider remove --org SLUG --id PROVIDER_ID",
    flags: { org: "string", id: "string" },
    async run(args, ctx) {
      const organizationId = await organizationOf(args, ctx);
      const id = requireFlag(args, "id");
      await ctx.sourceProviders().deleteSourceProvider({ organizationId, id });
      return { id, removed: true };
    },
  },
};
