import { readFileSync } from "node:fs";
import type { SourceProvider } from "@conveyor/proto/source-providers";
import { isoTime } from "@conveyor/runtime";
import { type CliArgs, optionalFlag, requireFlag, UsageError } from "./args.js";
import type { CommandContext, CommandSpec } from "./commands.js";

/** A GitHub App's private key from its file (at most 8 KiB, as the service takes). */
function readKeyFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new UsageError(`cannot read --private-key-file ${path}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  if (text.length > 8192) throw new UsageError(`--private-key-file ${path} is larger than 8 KiB`);
  return text;
}

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
      app_id: p.appId || null,
      description: p.description || null,
      created_at: isoTime(p.createdAt),
    }
  );
}

/** The source-provider commands (docs/statuses.md#connections): add, list and remove an organization's forges. */
export const PROVIDER_COMMANDS: Record<string, CommandSpec> = {
  "provider add": {
    usage:
      "provider add --org SLUG --kind github|github_enterprise|gitlab|bitbucket|gitea [--api-url URL] (--token TOKEN|- | --app-id ID --private-key-file PEM) [--description TEXT]",
    flags: {
      org: "string",
      kind: "string",
      "api-url": "string",
      token: "string",
      "app-id": "string",
      "private-key-file": "string",
      description: "string",
    },
    async run(args, ctx) {
      const organizationId = await organizationOf(args, ctx);
      const appId = optionalFlag(args, "app-id") ?? "";
      const keyFile = optionalFlag(args, "private-key-file");
      if ((appId === "") !== (keyFile === undefined)) {
        throw new UsageError("a GitHub App needs both --app-id and --private-key-file");
      }
      // `--token -` reads it from stdin, so that it shows in no process list.
      const given = appId === "" ? requireFlag(args, "token") : (optionalFlag(args, "token") ?? "");
      const token = given === "-" ? await ctx.readPassword() : given;
      const privateKey = keyFile === undefined ? "" : readKeyFile(keyFile);
      const { sourceProvider } = await ctx.sourceProviders().createSourceProvider({
        organizationId,
        kind: requireFlag(args, "kind"),
        apiUrl: optionalFlag(args, "api-url") ?? "",
        token,
        appId,
        privateKey,
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
