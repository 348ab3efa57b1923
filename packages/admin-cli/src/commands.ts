import type { AgentsService, AgentToken } from "@conveyor/proto/agents";
import type { ArtifactsService } from "@conveyor/proto/artifacts";
import {
  type IdentityService,
  type RegistriesService,
  Role,
  type Team,
  TeamMemberRole,
  TeamPrivacy,
  type TeamsService,
} from "@conveyor/proto/identity";
import type { NotificationsService } from "@conveyor/proto/notifications";
import type { OidcService } from "@conveyor/proto/oidc";
import type { PipelinesService } from "@conveyor/proto/pipelines";
import type { SourceProvidersService } from "@conveyor/proto/source-providers";
import { type Client, isoTime, TEAM_MEMBER_ROLES, TEAM_PRIVACIES } from "@conveyor/runtime";
import { type CliArgs, type FlagTypes, optionalFlag, requireFlag, UsageError } from "./args.js";
import { OIDC_COMMANDS } from "./oidc-commands.js";
import { PROVIDER_COMMANDS } from "./provider-commands.js";
import { QUEUE_COMMANDS } from "./queue-commands.js";
import { SCHEDULE_COMMANDS } from "./schedule-commands.js";
import { USER_COMMANDS } from "./user-commands.js";
import { WEBHOOK_COMMANDS } from "./webhook-commands.js";

/** The clients a command may use; created lazily so a usage error never needs a running stack. */
export interface CommandContext {
  identity(): Client<typeof IdentityService>;
  /** Teams and suites, served by the identity process. */
  teams(): Client<typeof TeamsService>;
  /** Package registries, served by the identity process. */
  registries(): Client<typeof RegistriesService>;
  agents(): Client<typeof AgentsService>;
  /** Jobs' OIDC signing keys, served by the agents process. */
  oidc(): Client<typeof OidcService>;
  artifacts(): Client<typeof ArtifactsService>;
  /** Pipelines and their schedules. */
  pipelines(): Client<typeof PipelinesService>;
  /** Source-provider connections, served by the notifications process. */
  sourceProviders(): Client<typeof SourceProvidersService>;
  /** Organization notification webhooks, served by the notifications process. */
  notifications(): Client<typeof NotificationsService>;
  /** The pages' address (WEB_URL), which sign-in links start with. */
  webUrl: string;
  /** A new password, from stdin (never from the command line, where `ps` would show it). */
  readPassword(): Promise<string>;
}

export type Command = (args: CliArgs, ctx: CommandContext) => Promise<unknown>;

/** The most pages `team list` reads (10,000 teams). */
const MAX_LIST_PAGES = 100;

/** A team as the team commands print it. */
const teamJson = (t: Team) => ({
  id: t.id,
  organization_id: t.organizationId,
  slug: t.slug,
  name: t.name,
  description: t.description,
  privacy: TEAM_PRIVACIES.nameOf(t.privacy),
  members_can_create_pipelines: t.membersCanCreatePipelines,
  created_at: isoTime(t.createdAt),
});

const roleName = (role: Role) => (role === Role.ADMIN ? "admin" : "member");

async function resolveOrganizationId(ctx: CommandContext, ref: string): Promise<string> {
  const { organization } = await ctx.identity().getOrganization({ slug: ref });
  if (!organization) throw new UsageError(`no organization ${ref}`);
  return organization.id;
}

/** One command: its usage line, the flags it takes (every one its usage names), and what it does. */
export interface CommandSpec {
  usage: string;
  flags: FlagTypes;
  run: Command;
}

/** Every command, keyed "<noun> <verb>" (or "<noun> <noun> <verb>"). */
export const COMMANDS: Record<string, CommandSpec> = {
  "org create": {
    usage: "org create --name NAME [--slug SLUG] [--teams-enabled]",
    flags: { name: "string", slug: "string", "teams-enabled": "boolean" },
    async run(args, ctx) {
      const { organization: o } = await ctx.identity().createOrganization({
        name: requireFlag(args, "name"),
        slug: optionalFlag(args, "slug") ?? "",
        teamsEnabled: args.flags["teams-enabled"] === true,
      });
      return (
        o && { id: o.id, slug: o.slug, name: o.name, teams_enabled: o.teamsEnabled, created_at: isoTime(o.createdAt) }
      );
    },
  },
  ...USER_COMMANDS,
  ...SCHEDULE_COMMANDS,
  ...QUEUE_COMMANDS,
  ...OIDC_COMMANDS,
  ...PROVIDER_COMMANDS,
  ...WEBHOOK_COMMANDS,
  "member add": {
    usage: "member add --org SLUG --user USER_ID [--role admin|member]",
    flags: { org: "string", user: "string", role: "string" },
    async run(args, ctx) {
      const role = optionalFlag(args, "role") ?? "member";
      if (role !== "admin" && role !== "member") throw new UsageError("--role must be admin or member");
      const { membership: m } = await ctx.identity().addMember({
        organization: requireFlag(args, "org"),
        userId: requireFlag(args, "user"),
        role: role === "admin" ? Role.ADMIN : Role.MEMBER,
      });
      return (
        m && {
          organization_id: m.organizationId,
          user_id: m.userId,
          role: roleName(m.role),
          created_at: isoTime(m.createdAt),
        }
      );
    },
  },
  "token create": {
    usage: "token create --user USER_ID --scopes a,b,c [--orgs slug1,slug2] [--description TEXT]",
    flags: { user: "string", scopes: "string", orgs: "string", description: "string" },
    async run(args, ctx) {
      const list = (v: string | undefined) =>
        (v ?? "")
          .split(",")
          .map((s) => s.trim())
          .filter((s) => s !== "");
      const { token: t, secret } = await ctx.identity().createAccessToken({
        userId: requireFlag(args, "user"),
        scopes: list(requireFlag(args, "scopes")),
        organizations: list(optionalFlag(args, "orgs")),
        description: optionalFlag(args, "description") ?? "",
      });
      return (
        t && {
          token: secret,
          id: t.id,
          user_id: t.userId,
          scopes: t.scopes,
          organization_ids: t.organizationIds,
          created_at: isoTime(t.createdAt),
        }
      );
    },
  },
  "token revoke": {
    usage: "token revoke --token TOKEN",
    flags: { token: "string" },
    async run(args, ctx) {
      const { token: t } = await ctx.identity().revokeAccessToken({ secret: requireFlag(args, "token") });
      return t && { id: t.id, user_id: t.userId, revoked_at: isoTime(t.revokedAt) };
    },
  },
  "team create": {
    usage: "team create --org SLUG --name NAME [--privacy visible|secret] [--description TEXT]",
    flags: { org: "string", name: "string", privacy: "string", description: "string" },
    async run(args, ctx) {
      const privacy = TEAM_PRIVACIES.valueOf(optionalFlag(args, "privacy") ?? "visible");
      if (privacy === TeamPrivacy.UNSPECIFIED)
        throw new UsageError(`--privacy must be ${TEAM_PRIVACIES.names.join(" or ")}`);
      const { team: t } = await ctx.teams().createTeam({
        organization: requireFlag(args, "org"),
        name: requireFlag(args, "name"),
        description: optionalFlag(args, "description") ?? "",
        privacy,
      });
      return t && teamJson(t);
    },
  },
  "team list": {
    usage: "team list --org SLUG [--user USER_ID]",
    flags: { org: "string", user: "string" },
    async run(args, ctx) {
      const organizationId = await resolveOrganizationId(ctx, requireFlag(args, "org"));
      const userId = optionalFlag(args, "user") ?? "";
      const teams: Team[] = [];
      // Every page, 100 at a time, as the operator (who sees secret teams too).
      for (let page = 1; page <= MAX_LIST_PAGES; page++) {
        const res = await ctx.teams().listTeams({ organizationId, userId, page, perPage: 100 });
        teams.push(...res.teams);
        if (res.teams.length === 0 || teams.length >= res.totalCount) break;
      }
      return teams.map(teamJson);
    },
  },
  "team member add": {
    usage: "team member add --org SLUG --team TEAM_ID --user USER_ID [--role member|maintainer]",
    flags: { org: "string", team: "string", user: "string", role: "string" },
    async run(args, ctx) {
      const role = optionalFlag(args, "role") ?? "member";
      const value = TEAM_MEMBER_ROLES.valueOf(role);
      if (value === TeamMemberRole.UNSPECIFIED)
        throw new UsageError(`--role must be ${TEAM_MEMBER_ROLES.names.join(" or ")}`);
      const organizationId = await resolveOrganizationId(ctx, requireFlag(args, "org"));
      const { member: m } = await ctx.teams().addTeamMember({
        organizationId,
        teamId: requireFlag(args, "team"),
        userId: requireFlag(args, "user"),
        role: value,
      });
      return (
        m && {
          team_id: m.teamId,
          user_id: m.user?.id,
          user_name: m.user?.name,
          role,
          created_at: isoTime(m.createdAt),
        }
      );
    },
  },
  "suite create": {
    usage: "suite create --org SLUG --name NAME",
    flags: { org: "string", name: "string" },
    async run(args, ctx) {
      const { suite: s } = await ctx.teams().createSuite({
        organization: requireFlag(args, "org"),
        name: requireFlag(args, "name"),
      });
      return (
        s && {
          id: s.id,
          organization_id: s.organizationId,
          slug: s.slug,
          name: s.name,
          created_at: isoTime(s.createdAt),
        }
      );
    },
  },
  "registry create": {
    usage: "registry create --org SLUG --name NAME [--ecosystem npm|oci|…]",
    flags: { org: "string", name: "string", ecosystem: "string" },
    async run(args, ctx) {
      const { registry: r } = await ctx.registries().createRegistry({
        organization: requireFlag(args, "org"),
        name: requireFlag(args, "name"),
        ecosystem: optionalFlag(args, "ecosystem") ?? "",
      });
      return (
        r && {
          id: r.id,
          organization_id: r.organizationId,
          slug: r.slug,
          name: r.name,
          ecosystem: r.ecosystem,
          created_at: isoTime(r.createdAt),
        }
      );
    },
  },
  "cluster create": {
    usage: "cluster create --org SLUG --name NAME [--description TEXT]",
    flags: { org: "string", name: "string", description: "string" },
    async run(args, ctx) {
      const organizationId = await resolveOrganizationId(ctx, requireFlag(args, "org"));
      const { cluster: c } = await ctx.agents().createCluster({
        organizationId,
        name: requireFlag(args, "name"),
        description: optionalFlag(args, "description") ?? "",
      });
      return (
        c && {
          id: c.id,
          organization_id: c.organizationId,
          name: c.name,
          description: c.description,
          created_at: isoTime(c.createdAt),
        }
      );
    },
  },
  "cluster list": {
    usage: "cluster list --org SLUG",
    flags: { org: "string" },
    async run(args, ctx) {
      const organizationId = await resolveOrganizationId(ctx, requireFlag(args, "org"));
      const { clusters } = await ctx.agents().listClusters({ organizationId });
      return {
        clusters: clusters.map((c) => ({
          id: c.id,
          name: c.name,
          description: c.description,
          created_at: isoTime(c.createdAt),
        })),
      };
    },
  },
  "agent-token create": {
    usage: "agent-token create --org SLUG [--cluster CLUSTER_ID] [--description TEXT]",
    flags: { org: "string", cluster: "string", description: "string" },
    async run(args, ctx) {
      const organizationId = await resolveOrganizationId(ctx, requireFlag(args, "org"));
      const { token: t, secret } = await ctx.agents().createAgentToken({
        organizationId,
        clusterId: optionalFlag(args, "cluster") ?? "",
        description: optionalFlag(args, "description") ?? "",
      });
      return t && { token: secret, ...agentTokenJson(t) };
    },
  },
  "agent-token list": {
    usage: "agent-token list --org SLUG [--cluster CLUSTER_ID]",
    flags: { org: "string", cluster: "string" },
    async run(args, ctx) {
      const organizationId = await resolveOrganizationId(ctx, requireFlag(args, "org"));
      const { tokens } = await ctx
        .agents()
        .listAgentTokens({ organizationId, clusterId: optionalFlag(args, "cluster") ?? "" });
      return { tokens: tokens.map(agentTokenJson) };
    },
  },
  "artifacts retention get": {
    usage: "artifacts retention get --org SLUG",
    flags: { org: "string" },
    async run(args, ctx) {
      const organizationId = await resolveOrganizationId(ctx, requireFlag(args, "org"));
      const r = await ctx.artifacts().getArtifactRetention({ organizationId });
      return { days: r.days, default: r.isDefault };
    },
  },
  "artifacts retention set": {
    usage: "artifacts retention set --org SLUG --days N (1 to 3650; 0 for the service default)",
    flags: { org: "string", days: "string" },
    async run(args, ctx) {
      const organizationId = await resolveOrganizationId(ctx, requireFlag(args, "org"));
      const raw = requireFlag(args, "days");
      if (!/^\d{1,4}$/.test(raw)) throw new UsageError("--days must be a whole number of days (0 for the default)");
      const r = await ctx.artifacts().setArtifactRetention({ organizationId, days: Number(raw) });
      return { days: r.days, default: r.isDefault };
    },
  },
  "agent-token revoke": {
    usage: "agent-token revoke --org SLUG --id TOKEN_ID",
    flags: { org: "string", id: "string" },
    async run(args, ctx) {
      const organizationId = await resolveOrganizationId(ctx, requireFlag(args, "org"));
      const { token } = await ctx.agents().revokeAgentToken({ organizationId, id: requireFlag(args, "id") });
      return token && agentTokenJson(token);
    },
  },
};

/** An agent registration token as the commands print it (never its secret, which only create shows). */
function agentTokenJson(t: AgentToken) {
  return {
    id: t.id,
    organization_id: t.organizationId,
    cluster_id: t.clusterId || null,
    description: t.description,
    created_at: isoTime(t.createdAt),
    revoked_at: isoTime(t.revokedAt),
  };
}

/** Every flag any command takes, and `--help`, which every command takes. */
export function allFlags(): FlagTypes {
  return Object.assign({ help: "boolean" }, ...Object.values(COMMANDS).map((c) => c.flags));
}

/** The help text listing every command. */
export function usage(): string {
  return [
    "usage: ci-admin <command> [flags]",
    "",
    ...Object.values(COMMANDS).map((c) => `  ci-admin ${c.usage}`),
    "",
    "Talks gRPC to the identity and agents services of the stack `npm start` runs (teams, suites and registries",
    "belong to the identity service).",
    "Set IDENTITY_URL / AGENTS_URL to reach another stack, and WEB_URL (default PUBLIC_URL, else",
    "http://127.0.0.1:8080) to the pages' address sign-in links start with. Prints one JSON object per call.",
  ].join("\n");
}
