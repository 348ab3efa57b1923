import { AgentsService } from "@conveyor/proto/agents";
import { ArtifactsService } from "@conveyor/proto/artifacts";
import { IdentityService, RegistriesService, TeamsService } from "@conveyor/proto/identity";
import { NotificationsService } from "@conveyor/proto/notifications";
import { OidcService } from "@conveyor/proto/oidc";
import { PipelinesService } from "@conveyor/proto/pipelines";
import { SourceProvidersService } from "@conveyor/proto/source-providers";
import { createEnvReader, createServiceClient, DEFAULT_PORTS, defaultServiceUrl } from "@conveyor/runtime";
import { checkFlags, parseArgs } from "./args.js";
import { allFlags, COMMANDS, type CommandContext, usage } from "./commands.js";
import { describeError } from "./describe-error.js";
import { readPassword } from "./read-password.js";

const env = createEnvReader(process.env);
const identityUrl = env.url("IDENTITY_URL", defaultServiceUrl("identity"));
const agentsUrl = env.url("AGENTS_URL", defaultServiceUrl("agents"));
const artifactsUrl = env.url("ARTIFACTS_URL", defaultServiceUrl("artifacts"));
const pipelinesUrl = env.url("PIPELINES_URL", defaultServiceUrl("pipelines"));
const notificationsUrl = env.url("NOTIFICATIONS_URL", defaultServiceUrl("notifications"));
// The gateway's own default: WEB_URL, else PUBLIC_URL, else the local gateway's address.
const webUrl = env.url("WEB_URL", env.optionalString("PUBLIC_URL") ?? `http://127.0.0.1:${DEFAULT_PORTS.gateway}`);
const grpc = { protocol: "grpc", timeoutMs: 15_000 } as const;
const ctx: CommandContext = {
  identity: () => createServiceClient(IdentityService, identityUrl, grpc),
  teams: () => createServiceClient(TeamsService, identityUrl, grpc),
  registries: () => createServiceClient(RegistriesService, identityUrl, grpc),
  agents: () => createServiceClient(AgentsService, agentsUrl, grpc),
  oidc: () => createServiceClient(OidcService, agentsUrl, grpc),
  artifacts: () => createServiceClient(ArtifactsService, artifactsUrl, grpc),
  pipelines: () => createServiceClient(PipelinesService, pipelinesUrl, grpc),
  sourceProviders: () => createServiceClient(SourceProvidersService, notificationsUrl, grpc),
  notifications: () => createServiceClient(NotificationsService, notificationsUrl, grpc),
  webUrl,
  readPassword: () => readPassword(),
};

const args = parseArgs(process.argv.slice(2), allFlags());
// Most commands are "<noun> <verb>"; a few name a part of a noun first, as in "team member add".
const key = [3, 2].map((n) => args.words.slice(0, n).join(" ")).find((k) => k in COMMANDS) ?? "";
const command = COMMANDS[key];
if (args.words.length === 0 || args.flags.help === true) {
  process.stdout.write(`${usage()}\n`);
  process.exit(args.words.length === 0 && args.flags.help !== true ? 2 : 0);
}
if (!command) {
  process.stderr.write(`ci-admin: unknown command "${args.words.join(" ")}"\n\n${usage()}\n`);
  process.exit(2);
}
try {
  checkFlags(args, key.split(" ").length, { ...command.flags, help: "boolean" });
  const result = await command.run(args, ctx);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (err) {
  const { message, code } = describeError(err, { identityUrl, agentsUrl, usage: command.usage });
  process.stderr.write(`ci-admin: ${message}\n`);
  process.exit(code);
}
